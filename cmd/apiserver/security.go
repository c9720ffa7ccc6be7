package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/storage"
)

type securityFlags struct {
	pkiDir, certFile, keyFile, clientCA string
	signCert, signKey                   string
	tokenFile, encryptionKeyFile, audit string
	etcdCA, etcdCert, etcdKey           string
	insecure                            bool
	serviceAccounts                     serviceAccountFlags
}

func (f *securityFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.pkiDir, "pki-dir", "", "folder made by `apiserver pki init`: sets the four TLS and signing files below from it")
	fs.StringVar(&f.certFile, "tls-cert-file", "", "serving certificate")
	fs.StringVar(&f.keyFile, "tls-key-file", "", "serving key")
	fs.StringVar(&f.clientCA, "client-ca-file", "", "CA that signs client certificates (the cluster CA)")
	fs.StringVar(&f.signCert, "cluster-signing-cert-file", "", "CA certificate used to sign node certificates (join, renew)")
	fs.StringVar(&f.signKey, "cluster-signing-key-file", "", "CA key used to sign node certificates")
	fs.StringVar(&f.tokenFile, "token-auth-file", "", "static bearer tokens: CSV token,user,uid,\"group1,group2\"")
	fs.StringVar(&f.encryptionKeyFile, "encryption-key-file", "", "AES-GCM keys (name:base64-32-bytes per line, first encrypts) for Secrets at rest")
	fs.StringVar(&f.audit, "audit-log-path", "", "append a JSON line per mutating request to this file")
	fs.StringVar(&f.etcdCA, "etcd-cafile", "", "CA of the external etcd's serving certificate (with --pki-dir and https etcd servers: <pki-dir>/etcd/ca.crt)")
	fs.StringVar(&f.etcdCert, "etcd-certfile", "", "client certificate for the external etcd (with --pki-dir: <pki-dir>/apiserver-etcd-client.crt)")
	fs.StringVar(&f.etcdKey, "etcd-keyfile", "", "client key for the external etcd (with --pki-dir: <pki-dir>/apiserver-etcd-client.key)")
	f.serviceAccounts.register(fs)
	fs.BoolVar(&f.insecure, "insecure", false, "serve plaintext with no authentication or authorization (loopback development only)")
}

func (f *securityFlags) apply(cfg *apiserver.Config, log *slog.Logger) error {
	if f.encryptionKeyFile != "" {
		enc, err := storage.LoadEncryption(f.encryptionKeyFile, "secrets")
		if err != nil {
			return err
		}
		cfg.Encryption = enc
	}
	if f.pkiDir != "" {
		set := func(p *string, name string) {
			if *p == "" {
				*p = filepath.Join(f.pkiDir, name)
			}
		}
		set(&f.certFile, "apiserver.crt")
		set(&f.keyFile, "apiserver.key")
		set(&f.clientCA, "ca.crt")
		set(&f.signCert, "ca.crt")
		set(&f.signKey, "ca.key")
		if etcdOverTLS(cfg.EtcdServers) {
			set(&f.etcdCA, pki.EtcdCACert)
			set(&f.etcdCert, pki.EtcdClientCert)
			set(&f.etcdKey, pki.EtcdClientKey)
		}
	}
	if err := f.applyEtcd(cfg, log); err != nil {
		return err
	}
	if err := f.serviceAccounts.apply(cfg, f.pkiDir, log); err != nil {
		return err
	}
	if f.insecure {
		for flag, addr := range map[string]string{"--listen": cfg.Listen, "--kube-listen": cfg.KubeListen} {
			if addr == "" {
				continue
			}
			host, _, _ := net.SplitHostPort(addr)
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return fmt.Errorf("--insecure is for a loopback-only development setup, but %s is %s: use TLS (apiserver pki init, then --pki-dir)", flag, addr)
			}
		}
		if f.certFile != "" {
			return fmt.Errorf("--insecure and --tls-cert-file contradict each other")
		}
		log.Warn("INSECURE MODE: no TLS, no authentication, no authorization — every local process is cluster-admin. Never use this beyond a loopback development setup.")
		return nil
	}
	if f.certFile == "" || f.keyFile == "" || f.clientCA == "" {
		return fmt.Errorf("refusing to serve without TLS: give --pki-dir (made by `apiserver pki init --dir DIR`) or --tls-cert-file, --tls-key-file and --client-ca-file; --insecure serves plaintext on loopback for development")
	}
	t, err := apiserver.ServingTLS(f.certFile, f.keyFile, f.clientCA)
	if err != nil {
		return err
	}
	cfg.TLS = t
	cfg.Auth = &apiserver.AuthConfig{TokenFile: f.tokenFile, AuditLogPath: f.audit}
	if f.signCert != "" && f.signKey != "" {
		ca, err := pki.LoadCA(f.signCert, f.signKey)
		if err != nil {
			return fmt.Errorf("--cluster-signing-*-file: %w", err)
		}
		cfg.Auth.SigningCA = ca
	}
	return nil
}

// applyEtcd sets the external etcd's client TLS, and warns about an etcd
// that anyone who reaches it can read and write.
func (f *securityFlags) applyEtcd(cfg *apiserver.Config, log *slog.Logger) error {
	if f.etcdCA != "" || f.etcdCert != "" || f.etcdKey != "" {
		if len(cfg.EtcdServers) == 0 {
			return fmt.Errorf("--etcd-cafile/--etcd-certfile/--etcd-keyfile are for --etcd-servers (the embedded etcd has no TLS: only the apiserver can open its socket)")
		}
		t, err := apiserver.EtcdClientTLS(f.etcdCA, f.etcdCert, f.etcdKey)
		if err != nil {
			return err
		}
		cfg.EtcdTLS = t
	}
	for _, u := range cfg.EtcdServers {
		if strings.HasPrefix(u, "https://") && cfg.EtcdTLS == nil {
			return fmt.Errorf("--etcd-servers %s: https needs --etcd-cafile, --etcd-certfile and --etcd-keyfile (or --pki-dir with the etcd certificates of `apiserver pki init`)", u)
		}
		if strings.HasPrefix(u, "http://") {
			log.Warn("etcd is reached in plaintext without client certificates: whoever reaches it reads and writes every object (RBAC included). Use https with client certificates (apiserver pki init makes them).", "etcd", u)
		}
	}
	return nil
}

// etcdOverTLS says whether the etcd servers are given as https URLs.
func etcdOverTLS(servers []string) bool {
	for _, u := range servers {
		if strings.HasPrefix(u, "https://") {
			return true
		}
	}
	return false
}

// initPKI makes the bundle in o.Dir, or with etcdOnly only its etcd part.
func initPKI(o pki.InitOptions, etcdOnly bool) error {
	if etcdOnly {
		// A new etcd CA would orphan the certificates etcd serves with.
		if _, err := os.Stat(filepath.Join(o.Dir, pki.EtcdCACert)); err == nil {
			return fmt.Errorf("--etcd-only: %s exists; remove the etcd folder first to replace it", filepath.Join(o.Dir, pki.EtcdCACert))
		}
		return pki.InitEtcd(o)
	}
	return pki.Init(o)
}
