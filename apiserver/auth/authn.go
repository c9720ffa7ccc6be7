package auth

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/tokens"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// SecretGetter reads a Secret from storage.
type SecretGetter func(ctx context.Context, ns, name string) (*v1.Secret, error)

// Authenticator turns a request's credentials into a User.
type Authenticator struct {
	static map[string]*User
	secret SecretGetter
	// Revoked, if set, says why a client certificate serial (hexadecimal)
	// is revoked, or false: a revoked certificate authenticates nobody,
	// on every request of every connection.
	Revoked func(serial string) (string, bool)
	// Now is the clock of token expirations (time.Now when nil).
	Now func() time.Time
	// ServiceAccounts, if set, authenticates service account tokens (JWTs
	// of its issuers).
	ServiceAccounts *ServiceAccountTokens
}

// NewAuthenticator reads the static tokens file (may be ""): CSV lines
// token,user,uid,"group1,group2" as in Kubernetes.
func NewAuthenticator(tokenFile string, secret SecretGetter) (*Authenticator, error) {
	a := &Authenticator{static: map[string]*User{}, secret: secret}
	if tokenFile == "" {
		return a, nil
	}
	f, err := os.Open(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("--token-auth-file: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.Comment = '#'
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("--token-auth-file %s: %w", tokenFile, err)
	}
	for i, rec := range recs {
		if len(rec) < 2 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("--token-auth-file %s line %d: want token,user[,uid[,\"groups\"]]", tokenFile, i+1)
		}
		u := &User{Name: rec[1], Method: "token"}
		if len(rec) > 3 && rec[3] != "" {
			u.Groups = strings.Split(rec[3], ",")
		}
		a.static[rec[0]] = u
	}
	return a, nil
}

// Authenticate identifies the caller: a verified client certificate wins,
// then a bearer token. No credentials at all is anonymous (nil error);
// wrong credentials are ErrUnauthenticated.
func (a *Authenticator) Authenticate(ctx context.Context) (*User, error) {
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 && len(ti.State.VerifiedChains[0]) > 0 {
			leaf := ti.State.VerifiedChains[0][0]
			if leaf.Subject.CommonName == "" {
				return nil, apierrors.New(apierrors.ErrUnauthenticated, "client certificate has no common name")
			}
			serial := leaf.SerialNumber.Text(16)
			if a.Revoked != nil {
				if why, revoked := a.Revoked(serial); revoked {
					return nil, apierrors.New(apierrors.ErrUnauthenticated, "client certificate %q (serial %s) is revoked: %s", leaf.Subject.CommonName, serial, why)
				}
			}
			groups := append([]string(nil), leaf.Subject.Organization...)
			return &User{Name: leaf.Subject.CommonName, Groups: append(groups, GroupAuthenticated), Method: "certificate", Serial: serial}, nil
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	h := md.Get("authorization")
	if len(h) == 0 {
		return &User{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}, Method: "anonymous"}, nil
	}
	tok, ok := strings.CutPrefix(h[0], "Bearer ")
	if !ok || tok == "" {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "authorization header must be \"Bearer <token>\"")
	}
	if u := a.lookupStatic(tok); u != nil {
		return &User{Name: u.Name, Groups: append(append([]string(nil), u.Groups...), GroupAuthenticated), Method: "token"}, nil
	}
	if a.ServiceAccounts != nil {
		if u, ok, err := a.ServiceAccounts.Authenticate(ctx, tok); ok {
			return u, err
		}
	}
	id, sec, ok := SplitToken(tok)
	if !ok || a.secret == nil {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "invalid bearer token")
	}
	s, err := a.secret(ctx, tokens.Namespace, tokens.UserPrefix+id)
	if err != nil || s.Type != tokens.UserTokenType || !SecretMatches(s, sec) {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "invalid or revoked bearer token")
	}
	if exp, ok := Expired(s, a.now()); ok {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "bearer token %s expired at %s: ask for a new one (tugctl token create --user ...)", id, exp)
	}
	u := &User{Name: string(s.Data[tokens.DataUser]), Method: "token", TokenID: id}
	if g := string(s.Data[tokens.DataGroups]); g != "" {
		u.Groups = strings.Split(g, ",")
	}
	if u.Name == "" {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "token names no user")
	}
	u.Groups = append(u.Groups, GroupAuthenticated)
	return u, nil
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// SecretMatches reports whether a token Secret holds secret: as its
// SHA-256 (tokens.DataSecretHash), or as itself (older versions).
func SecretMatches(s *v1.Secret, secret string) bool {
	if h := s.Data[tokens.DataSecretHash]; len(h) > 0 {
		return subtle.ConstantTimeCompare(h, tokens.Hash(secret)) == 1
	}
	plain := s.Data[tokens.DataSecret]
	return len(plain) > 0 && subtle.ConstantTimeCompare(plain, []byte(secret)) == 1
}

// Expired reports whether a token Secret's expiration (RFC 3339) has
// passed at now, and says when; one that cannot be read counts as passed.
func Expired(s *v1.Secret, now time.Time) (string, bool) {
	exp := string(s.Data[tokens.DataExpiration])
	if exp == "" {
		return "", false
	}
	t, err := time.Parse(time.RFC3339, exp)
	return exp, err != nil || !now.Before(t)
}

func (a *Authenticator) lookupStatic(tok string) *User {
	for t, u := range a.static {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			return u
		}
	}
	return nil
}

// SplitToken splits "<id>.<secret>" (6 and 16 lower-case alphanumerics).
func SplitToken(tok string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(tok, ".")
	if !ok || len(id) != 6 || len(secret) != 16 || !alnum(id) || !alnum(secret) {
		return "", "", false
	}
	return id, secret, true
}

func alnum(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
