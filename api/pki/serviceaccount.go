package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The service-account key pair: the apiserver signs service account tokens
// with the private key and verifies them with the public one, kubeadm's
// file names. Every apiserver of a cluster must have the same pair (they
// verify each other's tokens): Init makes it beside the certificates, and
// EnsureServiceAccountKey makes it once in a bundle made before it existed.
const (
	ServiceAccountKey    = "sa.key"
	ServiceAccountPubKey = "sa.pub"
)

// writeServiceAccountKey writes a new pair into dir; an existing sa.key is
// kept (os.Link does not replace: two apiservers starting together on one
// directory end with the same key).
func writeServiceAccountKey(dir string) error {
	key, err := NewKey()
	if err != nil {
		return err
	}
	kp, err := KeyPEM(key)
	if err != nil {
		return err
	}
	pub, err := PublicKeyPEM(key.Public())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".sa.key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(kp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, ServiceAccountKey)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return WriteFile(filepath.Join(dir, ServiceAccountPubKey), pub, 0o644)
}

// EnsureServiceAccountKey returns the path of dir's sa.key, making the
// pair first if it is missing.
func EnsureServiceAccountKey(dir string) (string, error) {
	p := filepath.Join(dir, ServiceAccountKey)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if err := writeServiceAccountKey(dir); err != nil {
		return "", fmt.Errorf("making the service-account key %s: %w", p, err)
	}
	return p, nil
}

// PublicKeyPEM encodes a public key (PKIX, "PUBLIC KEY").
func PublicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// LoadSigningKey reads the first RSA or ECDSA private key of a PEM file
// (PKCS#8, PKCS#1 or SEC 1), as --service-account-signing-key-file takes.
func LoadSigningKey(file string) (crypto.Signer, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%s: no RSA or ECDSA private key in PEM", file)
		}
		if k := parsePrivateKey(b); k != nil {
			return k, nil
		}
	}
}

func parsePrivateKey(b *pem.Block) crypto.Signer {
	switch b.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil
		}
		switch k := k.(type) {
		case *rsa.PrivateKey:
			return k
		case *ecdsa.PrivateKey:
			return k
		}
	case "RSA PRIVATE KEY":
		if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
			return k
		}
	case "EC PRIVATE KEY":
		if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
			return k
		}
	}
	return nil
}

// LoadPublicKeys reads every RSA or ECDSA public key of a PEM file: public
// keys, certificates, and the public halves of private keys, as
// --service-account-key-file takes.
func LoadPublicKeys(file string) ([]crypto.PublicKey, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []crypto.PublicKey
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		switch b.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out = append(out, k)
		case "RSA PUBLIC KEY":
			k, err := x509.ParsePKCS1PublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out = append(out, k)
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out = append(out, c.PublicKey)
		default:
			if k := parsePrivateKey(b); k != nil {
				out = append(out, k.Public())
			}
		}
	}
	for _, k := range out {
		switch k.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
		default:
			return nil, fmt.Errorf("%s: a %T key: only RSA and ECDSA keys verify service account tokens", file, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no public key, certificate or private key in PEM", file)
	}
	return out, nil
}
