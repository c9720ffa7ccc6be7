// Package join gets and keeps a kubelet's client certificate: on first
// start it spends a join token (tugctl token create) on a certificate for
// system:node:<name>, generating the key locally so it never leaves the
// node; afterwards it renews the certificate with the current one before it
// expires. Connections pick the new certificate up on their next handshake
// (TLSConfig reloads it from disk).
package join

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/internal/atomicfile"
)

// Config says where the apiserver is and where the certificate lives.
type Config struct {
	Server   string
	CAFile   string // the cluster CA (to verify the apiserver)
	Token    string // join token, used only when there is no certificate yet
	NodeName string
	Dir      string // holds node.crt and node.key
	// RenewWhenLeft renews once less than this fraction of the lifetime is
	// left (default 1/3).
	RenewWhenLeft float64
}

// Paths of the certificate pair in cfg.Dir.
func (c Config) Paths() (cert, key string) {
	return filepath.Join(c.Dir, "node.crt"), filepath.Join(c.Dir, "node.key")
}

// Validate names the missing setting.
func (c Config) Validate() error {
	switch {
	case c.Server == "":
		return fmt.Errorf("--server: required")
	case c.CAFile == "":
		return fmt.Errorf("--ca-file: required to join (the cluster CA)")
	case c.NodeName == "":
		return fmt.Errorf("--node-name: required")
	case c.Dir == "":
		return fmt.Errorf("certificate directory: required")
	}
	if err := validation.NodeName("--node-name", c.NodeName); err != nil {
		return err
	}
	return nil
}

// EnsureCertificate makes sure a valid certificate is in cfg.Dir, joining
// with the token if there is none (or it has expired).
func EnsureCertificate(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	certFile, _ := cfg.Paths()
	if cert, err := readCert(certFile); err == nil && time.Now().Before(cert.NotAfter) {
		return nil
	}
	if cfg.Token == "" {
		return fmt.Errorf("no valid node certificate in %s and no --bootstrap-token to join with: create one with `tugctl token create`", cfg.Dir)
	}
	tlsCfg, err := client.TLSFromFiles(cfg.CAFile, "", "")
	if err != nil {
		return err
	}
	c, err := client.New(client.Config{Server: cfg.Server, TLS: tlsCfg, UserAgent: "kubelet-join"})
	if err != nil {
		return err
	}
	defer c.Close()
	return obtain(ctx, cfg, func(ctx context.Context, csr []byte) (*v1.CertificateResponse, error) {
		return v1.NewAuthClient(c.Conn()).JoinNode(ctx, &v1.JoinNodeRequest{Token: cfg.Token, NodeName: cfg.NodeName, Csr: csr})
	})
}

// obtain makes a key and CSR, asks for a certificate and writes both files.
func obtain(ctx context.Context, cfg Config, ask func(context.Context, []byte) (*v1.CertificateResponse, error)) error {
	key, err := pki.NewKey()
	if err != nil {
		return err
	}
	csr, err := pki.NewCSR(key, pki.Subject{User: pki.NodeUserPrefix + cfg.NodeName, Groups: []string{pki.GroupNodes}})
	if err != nil {
		return err
	}
	resp, err := ask(ctx, csr)
	if err != nil {
		return fmt.Errorf("getting a node certificate: %w", apierrors.FromGRPC(err))
	}
	keyPEM, err := pki.KeyPEM(key)
	if err != nil {
		return err
	}
	certFile, keyFile := cfg.Paths()
	// Key first, then certificate, each atomically: a reader never pairs a
	// new certificate with an old key for longer than one rename.
	if err := writeAtomic(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return writeAtomic(certFile, resp.Certificate, 0o644)
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, bytes.NewReader(data), mode)
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return pki.ParseCertPEM(data)
}

// TLSConfig is a client TLS config that verifies the apiserver with the
// cluster CA and presents the node certificate, re-read from disk at every
// handshake so renewals take effect without a restart.
func TLSConfig(cfg Config) (*tls.Config, error) {
	t, err := client.TLSFromFiles(cfg.CAFile, "", "")
	if err != nil {
		return nil, err
	}
	certFile, keyFile := cfg.Paths()
	t.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		return &c, nil
	}
	return t, nil
}

// RunRenewal renews the certificate through c (a client authenticated with
// it) whenever less than RenewWhenLeft of its lifetime is left, until ctx
// ends. Failures are retried every minute.
func RunRenewal(ctx context.Context, c *client.Client, cfg Config, log *slog.Logger) error {
	if cfg.RenewWhenLeft <= 0 {
		cfg.RenewWhenLeft = 1.0 / 3
	}
	if log == nil {
		log = slog.Default()
	}
	certFile, _ := cfg.Paths()
	for {
		wait := time.Minute
		cert, err := readCert(certFile)
		if err == nil {
			life := cert.NotAfter.Sub(cert.NotBefore)
			renewAt := cert.NotAfter.Add(-time.Duration(float64(life) * cfg.RenewWhenLeft))
			if time.Now().After(renewAt) {
				err = obtain(ctx, cfg, func(ctx context.Context, csr []byte) (*v1.CertificateResponse, error) {
					return v1.NewAuthClient(c.Conn()).RenewCertificate(ctx, &v1.RenewCertificateRequest{Csr: csr})
				})
				if err == nil {
					log.Info("renewed node certificate", "node", cfg.NodeName)
					wait = time.Second
				} else {
					log.Warn("renewing node certificate failed; retrying", "node", cfg.NodeName, "err", err)
				}
			} else {
				wait = min(time.Until(renewAt), time.Hour)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}
