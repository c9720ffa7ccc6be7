package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Service account tokens, as Kubernetes makes them (its
// pkg/serviceaccount): a JWT signed by the apiserver's service-account key
// (ES256/384/512 for ECDSA keys, RS256 for RSA), with the standard claims
// iss, sub (system:serviceaccount:NS:NAME), aud, exp, iat, nbf and jti, and
// a private "kubernetes.io" claim naming the namespace, the account and the
// objects the token is bound to, each with its uid. The token says who it
// is for; what makes it still valid is checked on every use against
// storage: the account, and the pod or secret it is bound to, must exist
// with the uid the token names. A deleted pod's token stops working at once
// (Kubernetes gives a deleted object's token 60 s, the grace below, to let
// a terminating pod finish; a pod's deletion timestamp counts from when it
// was asked to stop).

// Extra keys of a service account user (Kubernetes' names).
const (
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"

	GroupServiceAccounts = "system:serviceaccounts"
)

// deletedGrace is how long after its deletion timestamp an object still
// validates the tokens bound to it (Kubernetes' 60 seconds).
const deletedGrace = 60 * time.Second

// ObjectGetter reads the metadata of a stored object: kind is "ServiceAccount",
// "Pod", "Secret" or "Node" (ns empty for a Node). A missing object is an
// error wrapping apierrors.ErrNotFound.
type ObjectGetter func(ctx context.Context, kind, ns, name string) (*v1.ObjectMeta, error)

// ServiceAccountTokens issues and verifies service account tokens.
type ServiceAccountTokens struct {
	// Issuers are the accepted iss values; the first is put in the tokens
	// made here (--service-account-issuer, repeatable).
	issuers []string
	// audiences are the apiserver's own (--api-audiences): a token
	// authenticates only if it names one, and a request that names none
	// gets them.
	audiences []string
	signer    jose.Signer
	keys      []jose.JSONWebKey
	get       ObjectGetter
	// Now is the clock tokens are checked by (time.Now when nil).
	Now func() time.Time
}

// ServiceAccountOptions configure NewServiceAccountTokens.
type ServiceAccountOptions struct {
	// SigningKey signs the tokens (RSA or ECDSA); nil: tokens are verified
	// but not issued.
	SigningKey crypto.Signer
	// VerifyKeys verify tokens besides SigningKey's public key (keys being
	// rotated out, other apiservers').
	VerifyKeys []crypto.PublicKey
	Issuers    []string
	// Audiences default to Issuers[0].
	Audiences []string
	Get       ObjectGetter
}

// NewServiceAccountTokens checks the options.
func NewServiceAccountTokens(o ServiceAccountOptions) (*ServiceAccountTokens, error) {
	if len(o.Issuers) == 0 || slices.Contains(o.Issuers, "") {
		return nil, fmt.Errorf("--service-account-issuer: required")
	}
	if o.Get == nil {
		return nil, fmt.Errorf("service account tokens need an object getter")
	}
	t := &ServiceAccountTokens{issuers: o.Issuers, audiences: o.Audiences, get: o.Get}
	if len(t.audiences) == 0 {
		t.audiences = []string{o.Issuers[0]}
	}
	pubs := slices.Clone(o.VerifyKeys)
	if o.SigningKey != nil {
		alg, err := algorithm(o.SigningKey.Public())
		if err != nil {
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
		kid, err := keyID(o.SigningKey.Public())
		if err != nil {
			return nil, err
		}
		t.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: o.SigningKey},
			(&jose.SignerOptions{}).WithHeader("kid", kid))
		if err != nil {
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
		pubs = append([]crypto.PublicKey{o.SigningKey.Public()}, pubs...)
	}
	if len(pubs) == 0 {
		return nil, fmt.Errorf("--service-account-key-file or --service-account-signing-key-file: a key is required")
	}
	seen := map[string]bool{}
	for _, p := range pubs {
		alg, err := algorithm(p)
		if err != nil {
			return nil, fmt.Errorf("--service-account-key-file: %w", err)
		}
		kid, err := keyID(p)
		if err != nil {
			return nil, err
		}
		if !seen[kid] {
			seen[kid] = true
			t.keys = append(t.keys, jose.JSONWebKey{Key: p, KeyID: kid, Algorithm: string(alg), Use: "sig"})
		}
	}
	return t, nil
}

// algorithm is the JWS algorithm Kubernetes signs with for a key.
func algorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
		return "", fmt.Errorf("unsupported ECDSA curve %s", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("a %T key: only RSA and ECDSA keys sign service account tokens", pub)
}

// keyID is Kubernetes' key id: the unpadded base64url SHA-256 of the
// public key's PKIX encoding.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func (t *ServiceAccountTokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Issuer is the iss of the tokens made here.
func (t *ServiceAccountTokens) Issuer() string { return t.issuers[0] }

// Audiences are the apiserver's audiences.
func (t *ServiceAccountTokens) Audiences() []string { return slices.Clone(t.audiences) }

// JWKS is the public keys as a JSON Web Key Set (/openid/v1/jwks).
func (t *ServiceAccountTokens) JWKS() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: slices.Clone(t.keys)}
}

// Algorithms are the algorithms of the verification keys, for the OpenID
// discovery document.
func (t *ServiceAccountTokens) Algorithms() []string {
	var out []string
	for _, k := range t.keys {
		if !slices.Contains(out, k.Algorithm) {
			out = append(out, k.Algorithm)
		}
	}
	slices.Sort(out)
	return out
}

// Ref names an object a token is bound to.
type Ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// TokenClaims are what a token says beyond its times.
type TokenClaims struct {
	Namespace      string
	ServiceAccount Ref
	Pod, Secret    *Ref
	Node           *Ref
	Audiences      []string
}

type kubernetesClaims struct {
	Namespace      string `json:"namespace"`
	ServiceAccount *Ref   `json:"serviceaccount,omitempty"`
	Pod            *Ref   `json:"pod,omitempty"`
	Secret         *Ref   `json:"secret,omitempty"`
	Node           *Ref   `json:"node,omitempty"`
}

type privateClaims struct {
	Kubernetes *kubernetesClaims `json:"kubernetes.io,omitempty"`
}

// Issue signs a token issued at now (whole seconds) and valid for d; it
// returns the token and when it expires.
func (t *ServiceAccountTokens) Issue(c TokenClaims, now time.Time, d time.Duration) (string, time.Time, error) {
	if t.signer == nil {
		return "", time.Time{}, apierrors.New(apierrors.ErrUnavailable, "this apiserver has no service-account signing key (--service-account-signing-key-file): it verifies tokens but makes none")
	}
	now = now.Truncate(time.Second)
	exp := now.Add(d)
	std := jwt.Claims{
		Issuer:    t.issuers[0],
		Subject:   ServiceAccountPrefix + c.Namespace + ":" + c.ServiceAccount.Name,
		Audience:  jwt.Audience(c.Audiences),
		Expiry:    jwt.NewNumericDate(exp),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ID:        uuid.NewString(),
	}
	sa := c.ServiceAccount
	priv := privateClaims{Kubernetes: &kubernetesClaims{Namespace: c.Namespace, ServiceAccount: &sa, Pod: c.Pod, Secret: c.Secret, Node: c.Node}}
	tok, err := jwt.Signed(t.signer).Claims(std).Claims(priv).Serialize()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("signing the service account token: %w", err)
	}
	return tok, exp, nil
}

// signatureAlgorithms are those a token may be signed with.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.ES384, jose.ES512}

// Authenticate verifies a bearer token. ok is false when the token is not a
// service account token of this cluster (not a JWT, or another issuer's):
// the next authenticator may know it. With ok, a nil error means a valid
// token; otherwise err (ErrUnauthenticated) says why it is not, in
// Kubernetes' words.
func (t *ServiceAccountTokens) Authenticate(ctx context.Context, token string) (u *User, ok bool, err error) {
	if strings.Count(token, ".") != 2 {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return nil, false, nil
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || !slices.Contains(t.issuers, unverified.Issuer) {
		return nil, false, nil
	}
	std, priv, err := t.verify(tok)
	if err != nil {
		return nil, true, unauthenticated("%v", err)
	}
	u, err = t.validate(ctx, std, priv)
	if err != nil {
		return nil, true, unauthenticated("%v", err)
	}
	return u, true, nil
}

func unauthenticated(format string, args ...any) error {
	return apierrors.New(apierrors.ErrUnauthenticated, "invalid bearer token: "+format, args...)
}

// verify checks the signature (with the key the token names, or any) and
// decodes the claims.
func (t *ServiceAccountTokens) verify(tok *jwt.JSONWebToken) (*jwt.Claims, *privateClaims, error) {
	kid := ""
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	var firstErr error
	for _, k := range t.keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		var std jwt.Claims
		var priv privateClaims
		if err := tok.Claims(k.Key, &std, &priv); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return &std, &priv, nil
	}
	if firstErr == nil {
		firstErr = errors.New("the token's signing key (kid " + kid + ") is not one of the apiserver's service-account keys")
	}
	return nil, nil, firstErr
}

// validate checks times, audience and claims, then that the account and
// the bound objects still exist with the uids the token names.
func (t *ServiceAccountTokens) validate(ctx context.Context, std *jwt.Claims, priv *privateClaims) (*User, error) {
	now := t.now()
	switch err := std.ValidateWithLeeway(jwt.Expected{Time: now}, jwt.DefaultLeeway); {
	case errors.Is(err, jwt.ErrExpired):
		return nil, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, errors.New("service account token is not valid yet")
	case err != nil:
		return nil, err
	}
	if std.Expiry == nil {
		return nil, errors.New("service account token has no expiration (exp)")
	}
	if !slices.ContainsFunc(t.audiences, std.Audience.Contains) {
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(std.Audience), t.audiences)
	}
	k := priv.Kubernetes
	if k == nil || k.ServiceAccount == nil || k.Namespace == "" || k.ServiceAccount.Name == "" {
		return nil, errors.New("service account token claims could not be validated: no kubernetes.io namespace and serviceaccount claims")
	}
	if want := ServiceAccountPrefix + k.Namespace + ":" + k.ServiceAccount.Name; std.Subject != want {
		return nil, fmt.Errorf("service account token claims could not be validated: sub %q is not %q", std.Subject, want)
	}
	if err := t.check(ctx, "ServiceAccount", k.Namespace, k.ServiceAccount, now); err != nil {
		return nil, err
	}
	if k.Secret != nil {
		if err := t.check(ctx, "Secret", k.Namespace, k.Secret, now); err != nil {
			return nil, err
		}
	}
	if k.Pod != nil {
		if err := t.check(ctx, "Pod", k.Namespace, k.Pod, now); err != nil {
			return nil, err
		}
	}
	if k.Node != nil && k.Pod == nil {
		// A token bound to a node itself; a pod's token names its node
		// for information (the pod's check covers it).
		if err := t.check(ctx, "Node", "", k.Node, now); err != nil {
			return nil, err
		}
	}
	u := &User{
		Name:   std.Subject,
		UID:    k.ServiceAccount.UID,
		Groups: []string{GroupServiceAccounts, GroupServiceAccounts + ":" + k.Namespace, GroupAuthenticated},
		Method: "serviceaccount",
		Extra:  map[string][]string{},
	}
	if std.ID != "" {
		u.Extra[ExtraCredentialID] = []string{"JTI=" + std.ID}
	}
	if k.Pod != nil {
		u.Extra[ExtraPodName] = []string{k.Pod.Name}
		u.Extra[ExtraPodUID] = []string{k.Pod.UID}
	}
	if k.Node != nil {
		u.Extra[ExtraNodeName] = []string{k.Node.Name}
		u.Extra[ExtraNodeUID] = []string{k.Node.UID}
	}
	return u, nil
}

// check looks the object up: it must exist, have the uid the token names,
// and not have been deleted more than deletedGrace ago.
func (t *ServiceAccountTokens) check(ctx context.Context, kind, ns string, ref *Ref, now time.Time) error {
	m, err := t.get(ctx, kind, ns, ref.Name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("service account token has been invalidated: %s", err)
		}
		return fmt.Errorf("service account token could not be validated: %w", err)
	}
	lower := strings.ToLower(kind)
	if kind == "ServiceAccount" {
		lower = "service account"
	}
	if m.GetUid() != ref.UID {
		if kind == "ServiceAccount" {
			return fmt.Errorf("service account UID (%s) does not match claim (%s)", m.GetUid(), ref.UID)
		}
		return fmt.Errorf("%s UID (%s) does not match service account %s ref claim (%s)", lower, m.GetUid(), lower, ref.UID)
	}
	if dt := m.GetDeletionTimestamp(); dt != nil && dt.AsTime().Add(deletedGrace).Before(now) {
		return fmt.Errorf("%s %s/%s has been deleted", lower, ns, ref.Name)
	}
	return nil
}
