package apiserver

import (
	"context"
	"crypto"
	"os"
	"path/filepath"
	"time"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// DefaultServiceAccountIssuer is the iss of the tokens when
// --service-account-issuer is not given (kubeadm's default).
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// ServiceAccountConfig is the service-account token signer and verifier,
// Kubernetes' --service-account-* flags.
type ServiceAccountConfig struct {
	// SigningKey signs tokens (--service-account-signing-key-file); nil:
	// this apiserver verifies tokens but issues none.
	SigningKey crypto.Signer
	// VerifyKeys verify tokens besides SigningKey's public key
	// (--service-account-key-file, repeatable).
	VerifyKeys []crypto.PublicKey
	// Issuers are the accepted iss claims, the first the one tokens get
	// (--service-account-issuer, repeatable; default
	// DefaultServiceAccountIssuer).
	Issuers []string
	// APIAudiences are the audiences the apiserver accepts and gives a
	// token request that names none (--api-audiences; default the first
	// issuer).
	APIAudiences []string
	// MaxTokenExpiration shortens longer requests to it
	// (--service-account-max-token-expiration; 0: no limit).
	MaxTokenExpiration time.Duration
	// Now is the clock tokens are issued by (time.Now when nil; tests
	// mint tokens in the past). Tokens are checked by the authenticator's.
	Now func() time.Time
}

// ServiceAccountFromDir sets cfg's service-account key from dir/sa.key,
// making the pair there first if it is missing (a PKI bundle made before
// the key existed): every apiserver started on the same folder shares it.
func ServiceAccountFromDir(cfg *Config, dir string) error {
	p, err := pki.EnsureServiceAccountKey(dir)
	if err != nil {
		return err
	}
	key, err := pki.LoadSigningKey(p)
	if err != nil {
		return err
	}
	if cfg.ServiceAccounts == nil {
		cfg.ServiceAccounts = &ServiceAccountConfig{}
	}
	cfg.ServiceAccounts.SigningKey = key
	if pub := filepath.Join(dir, pki.ServiceAccountPubKey); fileExists(pub) {
		keys, err := pki.LoadPublicKeys(pub)
		if err != nil {
			return err
		}
		cfg.ServiceAccounts.VerifyKeys = append(cfg.ServiceAccounts.VerifyKeys, keys...)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// setupServiceAccounts builds the token signer and verifier, and hands it
// to the authenticator.
func (s *Server) setupServiceAccounts() error {
	c := s.cfg.ServiceAccounts
	if c == nil {
		return nil
	}
	issuers := c.Issuers
	if len(issuers) == 0 {
		issuers = []string{DefaultServiceAccountIssuer}
	}
	t, err := auth.NewServiceAccountTokens(auth.ServiceAccountOptions{
		SigningKey: c.SigningKey, VerifyKeys: c.VerifyKeys, Issuers: issuers, Audiences: c.APIAudiences,
		Get: s.objectMeta,
	})
	if err != nil {
		return err
	}
	s.saTokens = t
	if s.authn != nil {
		t.Now = s.authn.Now
		s.authn.ServiceAccounts = t
	}
	return nil
}

// objectMeta reads a stored object's metadata for the token validator: one
// etcd read by key.
func (s *Server) objectMeta(ctx context.Context, kind, ns, name string) (*v1.ObjectMeta, error) {
	k, err := kinds.Lookup(kind)
	if err != nil {
		return nil, err
	}
	o, err := s.store.Get(ctx, k, ns, name)
	if err != nil {
		return nil, err
	}
	return o.GetMetadata(), nil
}
