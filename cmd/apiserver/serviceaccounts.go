package main

import (
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/apiserver"
)

// serviceAccountFlags are kube-apiserver's --service-account-* flags.
type serviceAccountFlags struct {
	signingKeyFile string
	keyFiles       listFlag
	issuers        listFlag
	audiences      string
	maxExpiration  time.Duration
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func (f *serviceAccountFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.signingKeyFile, "service-account-signing-key-file", "", "PEM private key (RSA or ECDSA) that signs service account tokens (default with --pki-dir: <pki-dir>/sa.key, made there if missing, so apiservers sharing the folder share the key)")
	fs.Var(&f.keyFiles, "service-account-key-file", "PEM file of public keys, certificates or private keys that verify service account tokens, besides the signing key's (repeatable)")
	fs.Var(&f.issuers, "service-account-issuer", "iss of the service account tokens; repeated: the first is put in new tokens, all are accepted (default "+apiserver.DefaultServiceAccountIssuer+")")
	fs.StringVar(&f.audiences, "api-audiences", "", "comma-separated audiences the API accepts in service account tokens, and gives a token request that names none (default: the first --service-account-issuer)")
	fs.DurationVar(&f.maxExpiration, "service-account-max-token-expiration", 0, "longest lifetime of a requested token: longer requests are shortened to it with a warning (0: no limit; at least 10m)")
}

// apply sets cfg.ServiceAccounts; pkiDir is --pki-dir's value.
func (f *serviceAccountFlags) apply(cfg *apiserver.Config, pkiDir string, log *slog.Logger) error {
	switch {
	case f.signingKeyFile != "":
		key, err := pki.LoadSigningKey(f.signingKeyFile)
		if err != nil {
			return fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
		cfg.ServiceAccounts = &apiserver.ServiceAccountConfig{SigningKey: key}
	case pkiDir != "":
		if err := apiserver.ServiceAccountFromDir(cfg, pkiDir); err != nil {
			// A read-only folder made before the key existed: the
			// apiserver runs, and token requests say why they fail.
			log.Warn("no service account tokens: the service-account key of --pki-dir is missing and cannot be made; run `apiserver pki init` again or give --service-account-signing-key-file", "err", err)
		}
	}
	for _, file := range f.keyFiles {
		keys, err := pki.LoadPublicKeys(file)
		if err != nil {
			return fmt.Errorf("--service-account-key-file: %w", err)
		}
		if cfg.ServiceAccounts == nil {
			cfg.ServiceAccounts = &apiserver.ServiceAccountConfig{}
		}
		cfg.ServiceAccounts.VerifyKeys = append(cfg.ServiceAccounts.VerifyKeys, keys...)
	}
	sa := cfg.ServiceAccounts
	if sa == nil {
		if len(f.issuers) > 0 || f.audiences != "" || f.maxExpiration != 0 {
			return fmt.Errorf("--service-account-issuer, --api-audiences and --service-account-max-token-expiration need a key: --service-account-signing-key-file, --service-account-key-file or --pki-dir")
		}
		return nil
	}
	for _, iss := range f.issuers {
		if iss == "" {
			return fmt.Errorf("--service-account-issuer: must not be empty")
		}
	}
	sa.Issuers = f.issuers
	for _, a := range strings.Split(f.audiences, ",") {
		if a = strings.TrimSpace(a); a != "" {
			sa.APIAudiences = append(sa.APIAudiences, a)
		}
	}
	sa.MaxTokenExpiration = f.maxExpiration
	return nil
}
