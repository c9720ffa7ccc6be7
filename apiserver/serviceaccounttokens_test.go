package apiserver_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// saClient is a client of s presenting a service account token.
func saClient(t *testing.T, s *apiservertest.Server, token string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Server: s.Addr(), TLS: mustTLS(t, s, ""), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func whoAmI(ctx context.Context, c *client.Client) (*v1.UserInfo, error) {
	u, err := v1.NewAuthClient(c.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{})
	return u, apierrors.FromGRPC(err)
}

// wantUnauthenticated checks that c is refused as unauthenticated, with
// why in the message.
func wantUnauthenticated(t *testing.T, what string, c *client.Client, why string) {
	t.Helper()
	_, err := whoAmI(ctxT(t), c)
	if !errors.Is(err, apierrors.ErrUnauthenticated) || !strings.Contains(err.Error(), why) {
		t.Errorf("%s: want Unauthenticated %q, got %v", what, why, err)
	}
}

// A token of the serviceaccounts/token subresource is a signed JWT with
// Kubernetes' claims that authenticates as system:serviceaccount:NS:NAME:
// RBAC bindings to the ServiceAccount apply, and it stops working when
// its account, or the pod it is bound to, is deleted, once it expires, and
// for another audience.
func TestServiceAccountTokens(t *testing.T) {
	s := apiservertest.StartSecure(t, func(c *apiserver.Config) { c.ServiceAccounts.MaxTokenExpiration = 2 * time.Hour })
	ctx := ctxT(t)
	mkNamespace(t, s.Client, "team")
	sas := client.For[*v1.ServiceAccount](s.Client)
	def, err := sas.Get(ctx, "team", "default")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.Client.CreateToken(ctx, "team", "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Kubernetes' defaults: the apiserver's audience (its issuer), an hour.
	if got := tr.Spec.GetAudiences(); len(got) != 1 || got[0] != apiserver.DefaultServiceAccountIssuer {
		t.Errorf("default audiences: %v", got)
	}
	if tr.Spec.GetExpirationSeconds() != 3600 || tr.Status.GetToken() == "" ||
		tr.Status.ExpirationTimestamp.AsTime().Sub(time.Now()) < 59*time.Minute || tr.Metadata.GetName() != "default" {
		t.Errorf("token request answer: %v", tr)
	}
	sa := saClient(t, s, tr.Status.Token)
	u, err := whoAmI(ctx, sa)
	if err != nil {
		t.Fatal(err)
	}
	wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"}
	if u.Name != "system:serviceaccount:team:default" || strings.Join(u.Groups, ",") != strings.Join(wantGroups, ",") ||
		u.Uid != def.Metadata.Uid || !strings.HasPrefix(u.Extra[auth.ExtraCredentialID].GetValues()[0], "JTI=") {
		t.Errorf("who am I: %v", u)
	}

	// Without a role: Forbidden, naming the account. A Role bound to the
	// ServiceAccount lets it list pods in its namespace, not elsewhere.
	pods := client.For[*v1.Pod](sa)
	if _, _, err := pods.List(ctx, client.ListOptions{Namespace: "team"}); !isForbidden(err) || !strings.Contains(err.Error(), "system:serviceaccount:team:default") {
		t.Fatalf("list without a role: %v", err)
	}
	if _, err := client.For[*v1.Role](s.Client).Create(ctx, &v1.Role{Metadata: &v1.ObjectMeta{Name: "pod-reader", Namespace: "team"},
		Rules: []*v1.PolicyRule{rule([]string{""}, []string{"pods"}, []string{"get", "list"})}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.RoleBinding](s.Client).Create(ctx, &v1.RoleBinding{Metadata: &v1.ObjectMeta{Name: "read-pods", Namespace: "team"},
		Subjects: []*v1.RBACSubject{{Kind: "ServiceAccount", Name: "default", Namespace: "team"}},
		RoleRef:  &v1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"}}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "the service account may list pods", func() error {
		_, _, err := pods.List(ctx, client.ListOptions{Namespace: "team"})
		return err
	})
	if _, _, err := pods.List(ctx, client.ListOptions{Namespace: "default"}); !isForbidden(err) || !strings.Contains(err.Error(), "system:serviceaccount:team:default") {
		t.Errorf("list in another namespace: %v", err)
	}

	// Bound to a pod: the pod and its uid are in the token; deleting the
	// pod invalidates it.
	p := newPod("web", nil)
	p.Metadata.Namespace = "team"
	pod, err := client.For[*v1.Pod](s.Client).Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := s.Client.CreateToken(ctx, "team", "default", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{
		BoundObjectRef: &v1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: "web", Uid: pod.Metadata.Uid}}})
	if err != nil {
		t.Fatal(err)
	}
	bc := saClient(t, s, bound.Status.Token)
	u, err = whoAmI(ctx, bc)
	if err != nil || u.Extra[auth.ExtraPodName].GetValues()[0] != "web" || u.Extra[auth.ExtraPodUID].GetValues()[0] != pod.Metadata.Uid {
		t.Fatalf("pod-bound token: %v, %v", u, err)
	}
	if _, err := client.For[*v1.Pod](s.Client).Delete(ctx, "team", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantUnauthenticated(t, "token of a deleted pod", bc, `service account token has been invalidated: pods "web" not found`)
	// The unbound token still works.
	if _, err := whoAmI(ctx, sa); err != nil {
		t.Errorf("unbound token after the pod's delete: %v", err)
	}

	// A deleted and recreated account: same name, another uid.
	if _, err := sas.Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "robot", Namespace: "team"}}); err != nil {
		t.Fatal(err)
	}
	rt, err := s.Client.CreateToken(ctx, "team", "robot", nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := saClient(t, s, rt.Status.Token)
	if _, err := whoAmI(ctx, rc); err != nil {
		t.Fatal(err)
	}
	if _, err := sas.Delete(ctx, "team", "robot", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantUnauthenticated(t, "token of a deleted account", rc, `serviceaccounts "robot" not found`)
	if _, err := sas.Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "robot", Namespace: "team"}}); err != nil {
		t.Fatal(err)
	}
	wantUnauthenticated(t, "token of a recreated account", rc, "service account UID (")

	// Another audience: not for this apiserver.
	vt, err := s.Client.CreateToken(ctx, "team", "default", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{Audiences: []string{"vault"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantUnauthenticated(t, "another audience", saClient(t, s, vt.Status.Token), `token audiences ["vault"] is invalid for the target audiences ["`+apiserver.DefaultServiceAccountIssuer+`"]`)

	// Expired: a token the apiserver's key signed two hours ago for an hour.
	key, err := pki.LoadSigningKey(filepath.Join(s.PKIDir, pki.ServiceAccountKey))
	if err != nil {
		t.Fatal(err)
	}
	noLookups := func(context.Context, string, string, string) (*v1.ObjectMeta, error) {
		return nil, errors.New("unused")
	}
	signer, err := auth.NewServiceAccountTokens(auth.ServiceAccountOptions{SigningKey: key, Issuers: []string{apiserver.DefaultServiceAccountIssuer}, Get: noLookups})
	if err != nil {
		t.Fatal(err)
	}
	claims := auth.TokenClaims{Namespace: "team", ServiceAccount: auth.Ref{Name: "default", UID: def.Metadata.Uid}, Audiences: []string{apiserver.DefaultServiceAccountIssuer}}
	old, _, err := signer.Issue(claims, time.Now().Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	wantUnauthenticated(t, "expired token", saClient(t, s, old), "service account token has expired")
	// The same signer now: valid (so the refusal above was the expiry).
	fresh, _, err := signer.Issue(claims, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whoAmI(ctx, saClient(t, s, fresh)); err != nil {
		t.Errorf("token signed in the test with the apiserver's key: %v", err)
	}
	// Another key, same issuer and kid-less: refused.
	other, _ := pki.NewKey()
	forger, _ := auth.NewServiceAccountTokens(auth.ServiceAccountOptions{SigningKey: other, Issuers: []string{apiserver.DefaultServiceAccountIssuer}, Get: noLookups})
	forged, _, _ := forger.Issue(claims, time.Now(), time.Hour)
	wantUnauthenticated(t, "token of another key", saClient(t, s, forged), "not one of the apiserver's service-account keys")
	// A changed payload under the apiserver's signature: refused.
	parts := strings.Split(fresh, ".")
	fparts := strings.Split(forged, ".")
	wantUnauthenticated(t, "tampered token", saClient(t, s, parts[0]+"."+fparts[1]+"."+parts[2]), "invalid bearer token")

	// Longer than --service-account-max-token-expiration: shortened.
	long, err := s.Client.CreateToken(ctx, "team", "default", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{ExpirationSeconds: proto.Int64(3 * 3600)}})
	if err != nil || long.Spec.GetExpirationSeconds() != 7200 || long.Status.ExpirationTimestamp.AsTime().After(time.Now().Add(2*time.Hour+time.Minute)) {
		t.Errorf("capped expiration: %v, %v", long, err)
	}
}

// Bad token requests are refused with Kubernetes' texts, naming the field.
func TestTokenRequestRefusals(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	mkNamespace(t, s.Client, "team")
	p := newPod("web", nil)
	p.Metadata.Namespace = "team"
	pod, err := client.For[*v1.Pod](s.Client).Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.ServiceAccount](s.Client).Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "robot", Namespace: "team"}}); err != nil {
		t.Fatal(err)
	}
	ref := func(kind, name, uid string) *v1.TokenRequest {
		return &v1.TokenRequest{Spec: &v1.TokenRequestSpec{BoundObjectRef: &v1.BoundObjectReference{Kind: kind, ApiVersion: "v1", Name: name, Uid: uid}}}
	}
	// (BadRequest crosses gRPC as InvalidArgument, read back as Invalid;
	// the Kubernetes door answers 400.)
	for _, c := range []struct {
		name, sa string
		tr       *v1.TokenRequest
		sentinel error
		want     string
	}{
		{"too short", "default", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{ExpirationSeconds: proto.Int64(599)}}, apierrors.ErrInvalid,
			`TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{"zero", "default", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{ExpirationSeconds: proto.Int64(0)}}, apierrors.ErrInvalid, "spec.expirationSeconds: Invalid value: 0"},
		{"too long", "default", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{ExpirationSeconds: proto.Int64(1<<32 + 1)}}, apierrors.ErrInvalid, "may not specify a duration larger than 2^32 seconds"},
		{"empty audience", "default", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{Audiences: []string{""}}}, apierrors.ErrInvalid, "spec.audiences[0]"},
		{"other name", "default", &v1.TokenRequest{Metadata: &v1.ObjectMeta{Name: "x"}}, apierrors.ErrInvalid, "metadata.name: Invalid value: \"x\": must match the service account name if specified"},
		{"no account", "ghost", nil, apierrors.ErrNotFound, `serviceaccounts "ghost" not found`},
		{"missing pod", "default", ref("Pod", "nope", ""), apierrors.ErrNotFound, `pods "nope" not found`},
		{"pod uid", "default", ref("Pod", "web", "123"), apierrors.ErrConflict, "the UID in the bound object reference (123) does not match the UID in record"},
		{"pod of another account", "robot", ref("Pod", "web", pod.Metadata.Uid), apierrors.ErrInvalid, `cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.`},
		{"bound kind", "default", ref("Deployment", "web", ""), apierrors.ErrInvalid, "cannot bind token to object of type /v1, Kind=Deployment"},
		{"no name", "default", ref("Pod", "", ""), apierrors.ErrInvalid, "spec.boundObjectRef.name: Required value"},
	} {
		_, err := s.Client.CreateToken(ctx, "team", c.sa, c.tr)
		if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %v %q, got %v", c.name, c.sentinel, c.want, err)
		}
	}
	// A user without create on serviceaccounts/token may not; edit may.
	alice := tokenClientFor(t, s, "alice")
	if _, err := alice.CreateToken(ctx, "team", "default", nil); !isForbidden(err) || !strings.Contains(err.Error(), "serviceaccounts/token") {
		t.Errorf("alice without a role: %v", err)
	}
	if _, err := client.For[*v1.RoleBinding](s.Client).Create(ctx, roleBinding("team", "alice-edit", "alice", "ClusterRole", "edit")); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, s, "alice", "create", "serviceaccounts/token", "team", "default")
	if _, err := alice.CreateToken(ctx, "team", "default", nil); err != nil {
		t.Errorf("alice with edit: %v", err)
	}
	// A subresource that is not there.
	_, err = s.Client.Objects().Create(ctx, &v1.CreateRequest{Object: anyOf(t, &v1.TokenRequest{}), Kind: "Pod", Namespace: "team", Name: "web", Subresource: "token"})
	if !errors.Is(apierrors.FromGRPC(err), apierrors.ErrNotFound) {
		t.Errorf("pods/token: %v", err)
	}
}

// tokenClientFor starts nothing: it is tokenClient of a user that the
// static token file of s does not know, so the token is made by the API.
func tokenClientFor(t *testing.T, s *apiservertest.Server, user string) *client.Client {
	t.Helper()
	resp, err := v1.NewAuthClient(s.Client.Conn()).CreateToken(ctxT(t), &v1.CreateTokenRequest{Type: "user", User: user})
	if err != nil {
		t.Fatal(err)
	}
	return saClient(t, s, resp.Token)
}

// A node may ask only for tokens bound to its own pods, of their account
// (the node authorizer and Kubernetes' NodeRestriction).
func TestNodeTokenRestriction(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	mkNamespace(t, s.Client, "team")
	if _, err := client.For[*v1.ServiceAccount](s.Client).Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "robot", Namespace: "team"}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2"} {
		if _, err := client.For[*v1.Node](s.Client).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	uids := map[string]string{}
	for name, node := range map[string]string{"mine": "n1", "theirs": "n2"} {
		p := newPod(name, nil)
		p.Metadata.Namespace = "team"
		pod, err := client.For[*v1.Pod](s.Client).Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Client.Bind(ctx, "team", name, node, 0); err != nil {
			t.Fatal(err)
		}
		uids[name] = pod.Metadata.Uid
	}
	kubelet := s.ClientAs("node-n1")
	bound := func(name, uid string) *v1.TokenRequest {
		return &v1.TokenRequest{Spec: &v1.TokenRequestSpec{BoundObjectRef: &v1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: name, Uid: uid}}}
	}
	tr, err := kubelet.CreateToken(ctx, "team", "default", bound("mine", uids["mine"]))
	if err != nil {
		t.Fatalf("token of the node's own pod: %v", err)
	}
	u, err := whoAmI(ctx, saClient(t, s, tr.Status.Token))
	n1, _ := client.For[*v1.Node](s.Client).Get(ctx, "", "n1")
	if err != nil || u.Extra[auth.ExtraNodeName].GetValues()[0] != "n1" || u.Extra[auth.ExtraNodeUID].GetValues()[0] != n1.Metadata.Uid {
		t.Errorf("the node's pod token: %v, %v", u, err)
	}
	for _, c := range []struct {
		name, sa string
		tr       *v1.TokenRequest
		want     string
	}{
		{"unbound", "default", nil, "node requested token not bound to a pod"},
		{"no uid", "default", bound("mine", ""), "node requested token with a pod binding without a uid"},
		{"another node's pod", "default", bound("theirs", uids["theirs"]), "node requested token bound to a pod scheduled on a different node"},
		{"an account none of its pods runs as", "robot", bound("mine", uids["mine"]), "no pod bound to node n1 runs as service account team/robot"},
	} {
		if _, err := kubelet.CreateToken(ctx, "team", c.sa, c.tr); !isForbidden(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want Forbidden %q, got %v", c.name, c.want, err)
		}
	}
}
