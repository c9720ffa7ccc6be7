package apiserver

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/tokens"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// Tokens are credentials, kept out of ordinary Secrets (package tokens):
// only Auth.CreateToken makes them, the Objects API refuses their types
// (tokenSecrets, an admission step), and every read of a Secret through
// the API — get, list, watch, on either door — leaves their secret out
// (redactSecret). So create on secrets in kube-system mints nothing, and
// a controller listing secrets sees no credential.

const (
	tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	tokenIDLen    = 6
	tokenSecret   = 16
)

func randomString(n int) (string, error) {
	b := make([]byte, n)
	max := big.NewInt(int64(len(tokenAlphabet)))
	for i := range b {
		x, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b[i] = tokenAlphabet[x.Int64()]
	}
	return string(b), nil
}

// CreateToken implements Auth.CreateToken.
func (a *authService) CreateToken(ctx context.Context, req *v1.CreateTokenRequest) (*v1.CreateTokenResponse, error) {
	s := a.s
	if req.TtlSeconds < 0 {
		return nil, apierrors.Invalid("ttlSeconds", "must be >= 0 (0: the token does not expire)")
	}
	data := map[string][]byte{}
	if req.Description != "" {
		data[tokens.DataDescription] = []byte(req.Description)
	}
	secretKind, _ := kinds.Lookup("Secret")
	nodeKind, _ := kinds.Lookup("Node")
	var prefix, typ string
	switch req.Type {
	case "join":
		if req.User != "" || len(req.Groups) > 0 {
			return nil, apierrors.Invalid("user", "a join token has no user or groups (type user makes a bearer token)")
		}
		// A bootstrap token is a Secret in kube-system, as in Kubernetes.
		if err := s.authorize(ctx, "create", secretKind, "", tokens.Namespace, "", ""); err != nil {
			return nil, err
		}
		if req.ReplaceNode != "" {
			if err := validation.NodeName("replaceNode", req.ReplaceNode); err != nil {
				return nil, err
			}
			// Taking over a node's name drops the old machine's credentials.
			if err := s.authorize(ctx, "delete", nodeKind, "", "", req.ReplaceNode, ""); err != nil {
				return nil, err
			}
			data[tokens.DataReplaceNode] = []byte(req.ReplaceNode)
		}
		prefix, typ = tokens.JoinPrefix, tokens.BootstrapTokenType
	case "user":
		if req.ReplaceNode != "" {
			return nil, apierrors.Invalid("replaceNode", "only for join tokens")
		}
		if req.User == "" || strings.ContainsAny(req.User, "\n\r") {
			return nil, apierrors.Invalid("user", "required: the user the token authenticates as")
		}
		// A token for a user and groups is as strong as impersonating them.
		if err := s.authorizeImpersonation(ctx, req.User, req.Groups, "a token for a user is as strong as impersonating it"); err != nil {
			return nil, err
		}
		for i, g := range req.Groups {
			if g == "" || strings.ContainsAny(g, ",\n\r") {
				return nil, apierrors.Invalid(fmt.Sprintf("groups[%d]", i), "%s is not a group name", validation.Short(g))
			}
		}
		data[tokens.DataUser] = []byte(req.User)
		if len(req.Groups) > 0 {
			data[tokens.DataGroups] = []byte(strings.Join(req.Groups, ","))
		}
		prefix, typ = tokens.UserPrefix, tokens.UserTokenType
	default:
		return nil, apierrors.Invalid("type", "%s is not one of join, user", validation.Short(req.Type))
	}
	resp := &v1.CreateTokenResponse{}
	if req.TtlSeconds > 0 {
		resp.Expiration = time.Now().Add(time.Duration(req.TtlSeconds) * time.Second).UTC().Format(time.RFC3339)
		data[tokens.DataExpiration] = []byte(resp.Expiration)
	}
	for try := 0; ; try++ {
		id, err := randomString(tokenIDLen)
		if err != nil {
			return nil, err
		}
		secret, err := randomString(tokenSecret)
		if err != nil {
			return nil, err
		}
		d := make(map[string][]byte, len(data)+2)
		for k, v := range data {
			d[k] = v
		}
		d[tokens.DataID], d[tokens.DataSecretHash] = []byte(id), tokens.Hash(secret)
		sec := &v1.Secret{Metadata: &v1.ObjectMeta{Name: prefix + id, Namespace: tokens.Namespace}, Type: typ, Data: d}
		_, err = s.create(internal(ctx), sec, false)
		if isAlreadyExists(err) && try < 3 {
			continue // an id collision: draw again
		}
		if err != nil {
			return nil, err
		}
		resp.Id, resp.Token = id, id+"."+secret
		return resp, nil
	}
}

// internalKey marks a context of the apiserver's own writes: admission
// steps that guard what only the apiserver may write let them through.
type internalKey struct{}

// internal is ctx for a write the apiserver makes on its own behalf, after
// it has authorized the caller: no user (so authorization-dependent
// admission passes) and marked internal.
func internal(ctx context.Context) context.Context {
	return context.WithValue(auth.WithUser(ctx, nil), internalKey{}, true)
}

func isInternal(ctx context.Context) bool { b, _ := ctx.Value(internalKey{}).(bool); return b }

// tokenSecrets is the Secret admission step that keeps token types to
// the apiserver: a user may not create a Secret of one, nor turn a Secret
// into one, nor change one (tokens are made by tugctl token create and
// revoked by deleting them).
type tokenSecrets struct{}

func (tokenSecrets) Release(context.Context, v1.Object) {}

func (tokenSecrets) Admit(ctx context.Context, obj, old v1.Object) error {
	if isInternal(ctx) || auth.UserFrom(ctx) == nil {
		return nil
	}
	typ := obj.(*v1.Secret).Type
	if old != nil && tokens.IsTokenType(old.(*v1.Secret).Type) {
		typ = old.(*v1.Secret).Type
	}
	if tokens.IsTokenType(typ) {
		return apierrors.New(apierrors.ErrForbidden, "secrets of type %q are credentials only the apiserver writes: make a token with tugctl token create (Auth.CreateToken), revoke it by deleting it", typ)
	}
	return nil
}

// redactSecret is what a read of obj returns: for a token Secret, a copy
// without its secret (hash or, from older versions, the secret itself).
func redactSecret(obj v1.Object) v1.Object {
	sec, ok := obj.(*v1.Secret)
	if !ok || !tokens.IsTokenType(sec.Type) {
		return obj
	}
	_, hash := sec.Data[tokens.DataSecretHash]
	_, plain := sec.Data[tokens.DataSecret]
	if !hash && !plain {
		return obj
	}
	out := proto.Clone(sec).(*v1.Secret)
	delete(out.Data, tokens.DataSecretHash)
	delete(out.Data, tokens.DataSecret)
	return out
}
