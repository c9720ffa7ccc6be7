package storage

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
)

// Encryption encrypts values of some kinds at rest with AES-GCM, so a
// reader of etcd (etcdctl get) sees ciphertext. Stored values are
// "tugboat:enc:aesgcm:v1:<key name>:" + nonce + ciphertext. The first key
// encrypts; every key decrypts, which is how keys rotate: add the new key
// first, restart the apiservers, re-write every Secret (tugctl get secrets -A
// -o yaml | tugctl apply -f -, or `tugctl rewrite secrets`), then drop the
// old key.
type Encryption struct {
	kinds map[string]bool // plural names, e.g. "secrets"
	keys  []namedKey
}

type namedKey struct {
	name string
	aead cipher.AEAD
}

const encPrefix = "tugboat:enc:aesgcm:v1:"

// LoadEncryption reads a key file: one key per line, "name:base64-of-32-bytes";
// blank lines and lines starting with # are skipped. The first key encrypts.
func LoadEncryption(path string, kinds ...string) (*Encryption, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--encryption-key-file: %w", err)
	}
	e := &Encryption{kinds: map[string]bool{}}
	for _, k := range kinds {
		e.kinds[k] = true
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, b64, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, ": ") {
			return nil, fmt.Errorf("--encryption-key-file %s line %d: want name:base64-key", path, i+1)
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("--encryption-key-file %s line %d: key %q must be 32 bytes, base64 (head -c 32 /dev/urandom | base64)", path, i+1, name)
		}
		block, _ := aes.NewCipher(raw)
		aead, _ := cipher.NewGCM(block)
		e.keys = append(e.keys, namedKey{name: name, aead: aead})
	}
	if len(e.keys) == 0 {
		return nil, fmt.Errorf("--encryption-key-file %s: no keys", path)
	}
	return e, nil
}

func (e *Encryption) applies(plural string) bool { return e != nil && e.kinds[plural] }

func (e *Encryption) encrypt(plural string, plain []byte) ([]byte, error) {
	if !e.applies(plural) {
		return plain, nil
	}
	k := e.keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := []byte(encPrefix + k.name + ":")
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, plain, []byte(plural)), nil
}

func (e *Encryption) decrypt(plural string, stored []byte) ([]byte, error) {
	if !bytes.HasPrefix(stored, []byte(encPrefix)) {
		return stored, nil // written before encryption was turned on
	}
	if e == nil {
		return nil, fmt.Errorf("%s value is encrypted but the apiserver has no --encryption-key-file", plural)
	}
	rest := stored[len(encPrefix):]
	i := bytes.IndexByte(rest, ':')
	if i < 0 {
		return nil, fmt.Errorf("%s value: malformed encryption header", plural)
	}
	name, body := string(rest[:i]), rest[i+1:]
	for _, k := range e.keys {
		if k.name != name {
			continue
		}
		ns := k.aead.NonceSize()
		if len(body) < ns {
			return nil, fmt.Errorf("%s value: truncated", plural)
		}
		return k.aead.Open(nil, body[:ns], body[ns:], []byte(plural))
	}
	return nil, fmt.Errorf("%s value is encrypted with key %q, which is not in --encryption-key-file", plural, name)
}
