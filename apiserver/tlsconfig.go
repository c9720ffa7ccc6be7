package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
)

// ServingTLS builds the apiserver's TLS config: TLS 1.3, its serving
// certificate, and client certificates verified against clientCA when
// presented (tokens are accepted too, so a certificate is optional).
func ServingTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
	}
	caPEM, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("--client-ca-file %s: no PEM certificates", clientCAFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.VerifyClientCertIfGiven,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// SecureFromPKIDir sets TLS and authentication from a folder made by
// `apiserver pki init` (pki.Init): serving pair, client CA, signing CA.
func SecureFromPKIDir(cfg *Config, dir string) error {
	t, err := ServingTLS(filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key"), filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	ca, err := pki.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
	if err != nil {
		return err
	}
	cfg.TLS = t
	if cfg.Auth == nil {
		cfg.Auth = &AuthConfig{}
	}
	cfg.Auth.SigningCA = ca
	return ServiceAccountFromDir(cfg, dir)
}

// EtcdClientTLS builds the apiserver's TLS config towards an external
// etcd: the etcd CA (not the cluster CA: a cluster client certificate must
// not open etcd) and the apiserver's etcd client certificate, TLS 1.2 or
// later (the floor etcd itself sets).
func EtcdClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" || certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("--etcd-cafile, --etcd-certfile and --etcd-keyfile go together")
	}
	t, err := client.TLSFromFiles(caFile, certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--etcd-cafile/--etcd-certfile/--etcd-keyfile: %w", err)
	}
	t.MinVersion = tls.VersionTLS12
	return t, nil
}
