package apiserver_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/api/tokens"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// TestTokensAreCredentials: token Secrets are made only by the apiserver
// (Auth.CreateToken), minting a user token needs impersonation rights, no
// read returns a token's secret, user tokens honour their expiration, and
// the controller-manager holds only what it needs.
func TestTokensAreCredentials(t *testing.T) {
	s := apiservertest.StartSecure(t, withTokens(t, "sam"))
	ctx := ctxT(t)
	secrets := client.For[*v1.Secret](s.Client)
	authc := v1.NewAuthClient(s.Client.Conn())

	// Not even an admin writes a token Secret through the Objects API.
	for _, typ := range []string{tokens.UserTokenType, tokens.BootstrapTokenType} {
		_, err := secrets.Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "token-abc123", Namespace: "kube-system"}, Type: typ,
			Data: map[string][]byte{"token-secret": []byte("0123456789abcdef"), "user": []byte("mallory"), "groups": []byte("system:masters")}})
		wantCode(t, "creating a "+typ+" Secret", err, codes.PermissionDenied, "credentials only the apiserver writes")
	}
	plain, err := secrets.Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "token-zzz999", Namespace: "kube-system"}, Data: map[string][]byte{"user": []byte("m")}})
	if err != nil {
		t.Fatal(err)
	}
	// A Secret's type never changes (Kubernetes' ValidateSecretUpdate), so
	// no Secret turns into a token: refused by validation, which runs
	// before the token admission step, as Kubernetes validates before its
	// validating admission.
	plain.Type = tokens.UserTokenType
	_, err = secrets.Update(ctx, plain)
	wantCode(t, "turning a Secret into a token", err, codes.InvalidArgument, `type: Invalid value: "`+tokens.UserTokenType+`": field is immutable`)
	if cur, err := secrets.Get(ctx, "kube-system", "token-zzz999"); err != nil || cur.Type != "Opaque" {
		t.Errorf("after the refused update: %v %v, want it still Opaque", cur, err)
	}

	// sam may create Secrets in kube-system: a join token, not a user token.
	if _, err := client.For[*v1.Role](s.Client).Create(ctx, &v1.Role{Metadata: &v1.ObjectMeta{Name: "secret-writer", Namespace: "kube-system"},
		Rules: []*v1.PolicyRule{rule([]string{""}, []string{"secrets"}, []string{"create", "get", "list"})}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.RoleBinding](s.Client).Create(ctx, roleBinding("kube-system", "sam", "sam", "Role", "secret-writer")); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, s, "sam", "create", "secrets", "kube-system", "")
	sam := v1.NewAuthClient(tokenClient(t, s, "sam").Conn())
	_, err = sam.CreateToken(ctx, &v1.CreateTokenRequest{Type: "user", User: "sam", Groups: []string{"system:masters"}})
	wantCode(t, "minting a system:masters token with create secrets", err, codes.PermissionDenied, `cannot impersonate`)
	if _, err := sam.CreateToken(ctx, &v1.CreateTokenRequest{Type: "join", TtlSeconds: 60}); err != nil {
		t.Errorf("a join token with create secrets in kube-system: %v", err)
	}

	// An admin's user token: the secret is nowhere to be read, at rest
	// only its hash.
	ut, err := authc.CreateToken(ctx, &v1.CreateTokenRequest{Type: "user", User: "tom", Groups: []string{"devs"}, Description: "for tom"})
	if err != nil {
		t.Fatal(err)
	}
	_, secretPart, _ := strings.Cut(ut.Token, ".")
	raw, err := s.Etcd().Get(ctx, "/registry/secrets/kube-system/token-"+ut.Id)
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw: %v", err)
	}
	if bytes.Contains(raw.Kvs[0].Value, []byte(secretPart)) || !bytes.Contains(raw.Kvs[0].Value, tokens.Hash(secretPart)) {
		t.Errorf("at rest the token is not (only) hashed: %q", raw.Kvs[0].Value)
	}
	// An old-format token (the secret itself, from before): still valid,
	// never returned.
	old, _ := proto.Marshal(&v1.Secret{Metadata: &v1.ObjectMeta{Name: "token-old123", Namespace: "kube-system", Uid: "u"}, Type: tokens.UserTokenType,
		Data: map[string][]byte{"token-secret": []byte("0123456789abcdef"), "user": []byte("olduser")}})
	if _, err := s.Etcd().Put(ctx, "/registry/secrets/kube-system/token-old123", string(old)); err != nil {
		t.Fatal(err)
	}
	oldc, _ := client.New(client.Config{Server: s.Addr(), TLS: mustTLS(t, s, ""), Token: "old123.0123456789abcdef"})
	defer oldc.Close()
	if who, err := v1.NewAuthClient(oldc.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); err != nil || who.Name != "olduser" {
		t.Errorf("an old-format token: %v %v", who, err)
	}
	noSecret := func(what string, sec *v1.Secret) {
		t.Helper()
		if _, ok := sec.Data[tokens.DataSecretHash]; ok {
			t.Errorf("%s returns the token hash", what)
		}
		if _, ok := sec.Data[tokens.DataSecret]; ok {
			t.Errorf("%s returns the token secret", what)
		}
	}
	got, err := secrets.Get(ctx, "kube-system", "token-"+ut.Id)
	if err != nil || string(got.Data["user"]) != "tom" {
		t.Fatalf("get: %v %v", got, err)
	}
	noSecret("get", got)
	// Nor is a token changed through the Objects API, type kept: the
	// token admission step refuses it (a read's copy lacks the hash, so
	// writing it back would break the token).
	changed := proto.Clone(got).(*v1.Secret)
	changed.Data["groups"] = []byte("system:masters")
	_, err = secrets.Update(ctx, changed)
	wantCode(t, "changing a token Secret", err, codes.PermissionDenied, "credentials only the apiserver writes")
	gotOld, _ := secrets.Get(ctx, "kube-system", "token-old123")
	noSecret("get of an old token", gotOld)
	// The controller-manager's list of secrets returns no credential.
	cmList, _, err := client.For[*v1.Secret](s.ClientAs("controller-manager")).List(ctx, client.ListOptions{Namespace: "kube-system"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sec := range cmList {
		if tokens.IsTokenType(sec.Type) {
			n++
			noSecret("the controller-manager's list", sec)
		}
	}
	if n < 3 {
		t.Errorf("the list has %d token Secrets", n)
	}
	// A watch from before the token replays it without its secret.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w, err := s.Client.Objects().Watch(wctx, &v1.WatchRequest{Kind: "Secret", Namespace: "kube-system", ResourceVersion: plain.Metadata.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	for seen := false; !seen; {
		e, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		sec := &v1.Secret{}
		if err := e.Object.UnmarshalTo(sec); err != nil {
			t.Fatal(err)
		}
		if sec.Metadata.Name == "token-"+ut.Id {
			seen = true
			noSecret("a watch", sec)
		}
	}

	// The controller-manager may not create what it does not own.
	_, err = client.For[*v1.Namespace](s.ClientAs("controller-manager")).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "cm-made"}})
	wantCode(t, "the controller-manager creating a namespace", err, codes.PermissionDenied, "cannot create")
	_, err = client.For[*v1.Node](s.ClientAs("controller-manager")).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: "cm-node"}})
	wantCode(t, "the controller-manager creating a node", err, codes.PermissionDenied, "cannot create")

	// A user token with a TTL stops working when it expires. The TTL
	// leaves a loaded machine the time to make a connection and ask once
	// before it runs out.
	short, err := authc.CreateToken(ctx, &v1.CreateTokenRequest{Type: "user", User: "brief", TtlSeconds: 5})
	if err != nil || short.Expiration == "" {
		t.Fatalf("token with ttl: %v %v", short, err)
	}
	bc, _ := client.New(client.Config{Server: s.Addr(), TLS: mustTLS(t, s, ""), Token: short.Token})
	defer bc.Close()
	if _, err := v1.NewAuthClient(bc.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	wait.Eventually(t, 30*time.Second, "the token expired", func() error {
		_, err := v1.NewAuthClient(bc.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{})
		if err == nil {
			return fmt.Errorf("still valid")
		}
		wantCode(t, "expired token", err, codes.Unauthenticated, "expired at "+short.Expiration)
		return nil
	})
}

// TestCertificateRevocation: a revoked certificate is refused on every
// request, also on a connection opened before, ends its watches, survives
// a restart, and only who may revoke certificates can.
func TestCertificateRevocation(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	sched := s.ClientAs("scheduler")
	pods := client.For[*v1.Pod](sched)
	if _, _, err := pods.List(ctx, client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	w, err := sched.Objects().Watch(wctx, &v1.WatchRequest{Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	// The scheduler may not revoke; the admin may.
	_, err = v1.NewAuthClient(sched.Conn()).RevokeCertificate(ctx, &v1.RevokeCertificateRequest{Serials: []string{"abc"}})
	wantCode(t, "the scheduler revoking", err, codes.PermissionDenied, `cannot revoke resource "certificates"`)
	pem, err := os.ReadFile(filepath.Join(s.PKIDir, "scheduler.crt"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := v1.NewAuthClient(s.Client.Conn()).RevokeCertificate(ctx, &v1.RevokeCertificateRequest{Certificates: pem, Reason: "key leaked"})
	if err != nil || len(resp.Revoked) != 1 || resp.Revoked[0].Subject != "system:kube-scheduler" {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	// The same connection, the next request: refused.
	_, _, err = pods.List(ctx, client.ListOptions{})
	wantCode(t, "a revoked certificate's next request", err, codes.Unauthenticated, `client certificate "system:kube-scheduler" (serial `+resp.Revoked[0].Serial+`) is revoked`)
	wantCode(t, "the revocation says why", err, codes.Unauthenticated, "by admin (key leaked)")
	// Its open watch ends within a bookmark interval.
	for {
		_, err := w.Recv()
		if err != nil {
			wantCode(t, "a revoked certificate's watch", err, codes.Unauthenticated, "is revoked")
			break
		}
	}
	list, err := v1.NewAuthClient(s.Client.Conn()).ListCertificates(ctx, &v1.ListCertificatesRequest{})
	if err != nil || len(list.Revoked) != 1 || list.Revoked[0].Reason != "key leaked" || list.Revoked[0].RevokedBy != "admin" {
		t.Errorf("list: %v %v", list, err)
	}
	// A bad serial is refused as such; revoking by serial works too.
	_, err = v1.NewAuthClient(s.Client.Conn()).RevokeCertificate(ctx, &v1.RevokeCertificateRequest{Serials: []string{"xyz"}})
	wantCode(t, "a bad serial", err, codes.InvalidArgument, "serials[0]")
	proxyCert, _ := os.ReadFile(filepath.Join(s.PKIDir, "proxy.crt"))
	proxySerial := certSerial(t, proxyCert)
	if _, err := v1.NewAuthClient(s.Client.Conn()).RevokeCertificate(ctx, &v1.RevokeCertificateRequest{Serials: []string{strings.ToUpper(proxySerial)}}); err != nil {
		t.Fatal(err)
	}
	// The list is in etcd: a restarted apiserver still refuses both.
	s.Restart()
	for _, name := range []string{"scheduler", "proxy"} {
		_, _, err := client.For[*v1.Pod](s.ClientAs(name)).List(ctx, client.ListOptions{})
		wantCode(t, name+" after a restart", err, codes.Unauthenticated, "is revoked")
	}
	if _, _, err := client.For[*v1.Pod](s.Client).List(ctx, client.ListOptions{}); err != nil {
		t.Errorf("the admin after a restart: %v", err)
	}
}

func certSerial(t *testing.T, pemData []byte) string {
	t.Helper()
	c, err := pki.ParseCertPEM(pemData)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.Text(16)
}

// TestCARotation walks the README's CA rotation: clients and the
// apiserver trust the old and the new CA, the apiserver serves and signs
// with the new one, nodes renew onto it, then the old CA is dropped.
func TestCARotation(t *testing.T) {
	oldDir := t.TempDir()
	if err := pki.Init(pki.InitOptions{Dir: oldDir, Nodes: []string{"n1"}}); err != nil {
		t.Fatal(err)
	}
	oldCA, _ := os.ReadFile(filepath.Join(oldDir, "ca.crt"))
	bundle := filepath.Join(t.TempDir(), "ca-bundle.crt")
	// The server's own PKI dir is the new CA: it serves and signs with it,
	// and accepts client certificates of both.
	s := apiservertest.StartSecure(t, func(c *apiserver.Config) {
		both := append(append([]byte{}, oldCA...), c.Auth.SigningCA.PEM...)
		if err := os.WriteFile(bundle, both, 0o644); err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(both)
		c.TLS.ClientCAs = pool
	})
	newDir := s.PKIDir
	ctx := ctxT(t)
	as := func(dir, name string) *client.Client {
		return certClient(t, s, bundle, filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	}
	for _, c := range []struct{ dir, what string }{{oldDir, "old"}, {newDir, "new"}} {
		if who, err := v1.NewAuthClient(as(c.dir, "admin").Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); err != nil || who.Name != "admin" {
			t.Errorf("the %s CA's admin while both are trusted: %v %v", c.what, who, err)
		}
	}
	// A node on the old CA renews onto the new one.
	n1 := as(oldDir, "node-n1")
	if _, err := client.For[*v1.Node](n1).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	key, _ := pki.NewKey()
	csr, _ := pki.NewCSR(key, pki.Subject{User: "system:node:n1", Groups: []string{"system:nodes"}})
	resp, err := v1.NewAuthClient(n1.Conn()).RenewCertificate(ctx, &v1.RenewCertificateRequest{Csr: csr})
	if err != nil {
		t.Fatal(err)
	}
	renewed, _ := pki.ParseCertPEM(resp.Certificate)
	newCA, _ := os.ReadFile(filepath.Join(newDir, "ca.crt"))
	signer, _ := pki.ParseCertPEM(newCA)
	if err := renewed.CheckSignatureFrom(signer); err != nil {
		t.Errorf("the renewed node certificate is not from the new CA: %v", err)
	}
	// Drop the old CA: its certificates no longer open the door.
	cfg := s.Config()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(newCA)
	cfg.TLS.ClientCAs = pool
	s.Restart()
	if _, err := v1.NewAuthClient(as(oldDir, "admin").Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); err == nil {
		t.Error("the old CA's admin after the old CA was dropped")
	}
	if who, err := v1.NewAuthClient(as(newDir, "admin").Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); err != nil || who.Name != "admin" {
		t.Errorf("the new CA's admin: %v %v", who, err)
	}
}
