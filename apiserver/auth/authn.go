package auth

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"fmt"
	"os"
	"strings"

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
			groups := append([]string(nil), leaf.Subject.Organization...)
			return &User{Name: leaf.Subject.CommonName, Groups: append(groups, GroupAuthenticated), Method: "certificate"}, nil
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
	id, sec, ok := SplitToken(tok)
	if !ok || a.secret == nil {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "invalid bearer token")
	}
	s, err := a.secret(ctx, tokens.Namespace, "token-"+id)
	if err != nil || s.Type != tokens.UserTokenType || subtle.ConstantTimeCompare(s.Data["token-secret"], []byte(sec)) != 1 {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "invalid or revoked bearer token")
	}
	u := &User{Name: string(s.Data["user"]), Method: "token"}
	if g := string(s.Data["groups"]); g != "" {
		u.Groups = strings.Split(g, ",")
	}
	if u.Name == "" {
		return nil, apierrors.New(apierrors.ErrUnauthenticated, "token names no user")
	}
	u.Groups = append(u.Groups, GroupAuthenticated)
	return u, nil
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
