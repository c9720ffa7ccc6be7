package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
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
	insecure                            bool
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

func initPKI(dir, names, ips, nodes string) error {
	o := pki.InitOptions{Dir: dir}
	for _, n := range split(names) {
		o.ServerNames = append(o.ServerNames, n)
	}
	for _, s := range split(ips) {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("--server-ips: %q is not an IP address", s)
		}
		o.ServerIPs = append(o.ServerIPs, ip)
	}
	o.Nodes = split(nodes)
	return pki.Init(o)
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
