package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/apiserver/storage"
)

func isForbidden(err error) bool { return errors.Is(err, apierrors.ErrForbidden) }

func TestTLSRefusesBadCredentials(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	// The admin works.
	if _, _, err := client.For[*v1.Pod](s.Client).List(ctx, client.ListOptions{}); err != nil {
		t.Fatalf("admin: %v", err)
	}
	// TLS but no certificate and no token: Unauthenticated.
	_, _, err := client.For[*v1.Pod](s.ClientAs("")).List(ctx, client.ListOptions{})
	if !errors.Is(err, apierrors.ErrUnauthenticated) {
		t.Fatalf("no credentials: want Unauthenticated, got %v", err)
	}
	// A certificate from another CA: the handshake fails.
	other := t.TempDir()
	if err := pki.Init(pki.InitOptions{Dir: other}); err != nil {
		t.Fatal(err)
	}
	tlsOther, _ := client.TLSFromFiles(filepath.Join(s.PKIDir, "ca.crt"), filepath.Join(other, "admin.crt"), filepath.Join(other, "admin.key"))
	c, _ := client.New(client.Config{Server: s.Addr(), TLS: tlsOther})
	defer c.Close()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, _, err := client.For[*v1.Pod](c).List(sctx, client.ListOptions{}); err == nil {
		t.Fatal("certificate from another CA was accepted")
	}
	// An expired certificate from the right CA: refused.
	ca, err := pki.LoadCA(filepath.Join(s.PKIDir, "ca.crt"), filepath.Join(s.PKIDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := pki.NewKey()
	certPEM, err := ca.IssueClient(key.Public(), pki.Subject{User: "admin", Groups: []string{pki.GroupMasters}}, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := pki.KeyPEM(key)
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "old.crt"), certPEM, 0o600)
	_ = os.WriteFile(filepath.Join(dir, "old.key"), keyPEM, 0o600)
	tlsOld, _ := client.TLSFromFiles(filepath.Join(s.PKIDir, "ca.crt"), filepath.Join(dir, "old.crt"), filepath.Join(dir, "old.key"))
	c2, _ := client.New(client.Config{Server: s.Addr(), TLS: tlsOld})
	defer c2.Close()
	if _, _, err := client.For[*v1.Pod](c2).List(sctx, client.ListOptions{}); err == nil {
		t.Fatal("expired certificate was accepted")
	}
}

func TestRBACViewRole(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	_ = os.WriteFile(tokens, []byte("viewtoken,vera,1001\n"), 0o600)
	s := apiservertest.StartSecure(t, func(c *apiserver.Config) { c.Auth.TokenFile = tokens })
	ctx := ctxT(t)
	if _, err := client.For[*v1.Pod](s.Client).Create(ctx, newPod("p", nil)); err != nil {
		t.Fatal(err)
	}
	vera, _ := client.New(client.Config{Server: s.Addr(), TLS: mustTLS(t, s, ""), Token: "viewtoken"})
	defer vera.Close()
	pods := client.For[*v1.Pod](vera)
	// No binding yet: denied, naming user, verb, kind and namespace.
	_, err := pods.Get(ctx, "default", "p")
	if !isForbidden(err) || !strings.Contains(err.Error(), `pods "p" is forbidden: User "vera" cannot get resource "pods" in API group "" in the namespace "default"`) {
		t.Fatalf("want a Forbidden naming the request, got %v", err)
	}
	if _, err := client.For[*v1.ClusterRoleBinding](s.Client).Create(ctx, &v1.ClusterRoleBinding{
		Metadata: &v1.ObjectMeta{Name: "vera-view"},
		Subjects: []*v1.RBACSubject{{Kind: "User", Name: "vera"}},
		RoleRef:  &v1.RoleRef{Kind: "ClusterRole", Name: "view"},
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "the view binding in force", func() error {
		_, err := pods.Get(ctx, "default", "p")
		return err
	})
	if _, err := pods.Create(ctx, newPod("q", nil)); !isForbidden(err) || !strings.Contains(err.Error(), "cannot create") {
		t.Fatalf("view may not create: %v", err)
	}
	if _, _, err := client.For[*v1.Secret](vera).List(ctx, client.ListOptions{}); !isForbidden(err) {
		t.Fatalf("view may not list secrets: %v", err)
	}
	// can-i through the API.
	auth := v1.NewAuthClient(vera.Conn())
	r, err := auth.Review(ctx, &v1.AccessReviewRequest{Verb: "create", Resource: "pods", Namespace: "default"})
	if err != nil || r.Allowed {
		t.Fatalf("review: %v %v", err, r)
	}
	r, err = v1.NewAuthClient(s.Client.Conn()).Review(ctx, &v1.AccessReviewRequest{Verb: "list", Resource: "pods", AsUser: "vera"})
	if err != nil || !r.Allowed {
		t.Fatalf("admin review as vera: %v %v", err, r)
	}
	if _, err := auth.Review(ctx, &v1.AccessReviewRequest{Verb: "list", Resource: "pods", AsUser: "admin"}); !isForbidden(apierrors.FromGRPC(err)) {
		t.Fatalf("vera may not impersonate: %v", err)
	}
}

func mustTLS(t *testing.T, s *apiservertest.Server, name string) *tls.Config {
	t.Helper()
	cert, key := "", ""
	if name != "" {
		cert, key = filepath.Join(s.PKIDir, name+".crt"), filepath.Join(s.PKIDir, name+".key")
	}
	c, err := client.TLSFromFiles(filepath.Join(s.PKIDir, "ca.crt"), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNodeRestriction(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	admin := s.Client
	for _, n := range []string{"n1", "n2"} {
		if _, err := client.For[*v1.Node](admin).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ pod, node, secret string }{{"p1", "n1", "s1"}, {"p2", "n2", "s2"}} {
		if _, err := client.For[*v1.Secret](admin).Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: c.secret}, StringData: map[string]string{"k": "v"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.For[*v1.Secret](admin).Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "pull-" + c.pod}, Type: "kubernetes.io/dockerconfigjson",
			StringData: map[string]string{".dockerconfigjson": `{"auths":{}}`}}); err != nil {
			t.Fatal(err)
		}
		p := newPod(c.pod, nil)
		p.Spec.ImagePullSecrets = []*v1.LocalObjectReference{{Name: "pull-" + c.pod}}
		if _, err := client.For[*v1.ConfigMap](admin).Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "cm-" + c.pod}}); err != nil {
			t.Fatal(err)
		}
		p.Spec.Volumes = []*v1.Volume{{Name: "s", Secret: &v1.SecretVolumeSource{SecretName: c.secret}},
			{Name: "p", Projected: &v1.ProjectedVolumeSource{Sources: []*v1.VolumeProjection{{ConfigMap: &v1.ConfigMapProjection{Name: "cm-" + c.pod}}}}}}
		if _, err := client.For[*v1.Pod](admin).Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Bind(ctx, "default", c.pod, c.node, 0); err != nil {
			t.Fatal(err)
		}
	}
	n1 := s.ClientAs("node-n1")
	pods := client.For[*v1.Pod](n1)
	// Its own pod: status update allowed.
	if _, err := pods.Mutate(ctx, "default", "p1", true, func(p *v1.Pod) error { p.Status.Phase = "Running"; return nil }); err != nil {
		t.Fatalf("own pod status: %v", err)
	}
	// Another node's pod: refused, with the reason.
	p2, err := client.For[*v1.Pod](admin).Get(ctx, "default", "p2")
	if err != nil {
		t.Fatal(err)
	}
	p2.Status.Phase = "Running"
	if _, err := pods.UpdateStatus(ctx, p2); !isForbidden(err) || !strings.Contains(err.Error(), "not bound to node n1") {
		t.Fatalf("node-1 updating node-2's pod: %v", err)
	}
	// Listing every pod is allowed, as Kubernetes' system:node role
	// allows: the node's proxy enforces NetworkPolicies whose peers are
	// pods anywhere. Writes stay limited to its own pods (above).
	if all, _, err := pods.List(ctx, client.ListOptions{}); err != nil || len(all) != 2 {
		t.Fatalf("unrestricted list: %v %d", err, len(all))
	}
	if got, _, err := pods.List(ctx, client.ListOptions{FieldSelector: "spec.nodeName=n1"}); err != nil || len(got) != 1 {
		t.Fatalf("own list: %v %d", err, len(got))
	}
	// Secrets: only those its pods use.
	secrets := client.For[*v1.Secret](n1)
	if _, err := secrets.Get(ctx, "default", "s1"); err != nil {
		t.Fatalf("own pod's secret: %v", err)
	}
	if _, err := secrets.Get(ctx, "default", "s2"); !isForbidden(err) {
		t.Fatalf("other node's secret: %v", err)
	}
	// Image pull secrets of its pods, not of another node's.
	if _, err := secrets.Get(ctx, "default", "pull-p1"); err != nil {
		t.Fatalf("own pod's image pull secret: %v", err)
	}
	if _, err := secrets.Get(ctx, "default", "pull-p2"); !isForbidden(err) {
		t.Fatalf("other node's image pull secret: %v", err)
	}
	if _, _, err := secrets.List(ctx, client.ListOptions{}); !isForbidden(err) {
		t.Fatalf("node listing secrets: %v", err)
	}
	// ConfigMaps too, as projected volumes' sources.
	cms := client.For[*v1.ConfigMap](n1)
	if _, err := cms.Get(ctx, "default", "cm-p1"); err != nil {
		t.Fatalf("own pod's projected configmap: %v", err)
	}
	if _, err := cms.Get(ctx, "default", "cm-p2"); !isForbidden(err) {
		t.Fatalf("other node's projected configmap: %v", err)
	}
	// What an ephemeral container's env and envFrom name (kubectl debug
	// --env, or a debug profile) becomes readable once it is added, as
	// Kubernetes' node graph follows ephemeral containers.
	if _, err := client.For[*v1.Secret](admin).Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "debug-env"}, StringData: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.ConfigMap](admin).Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "debug-cm"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Get(ctx, "default", "debug-env"); !isForbidden(err) {
		t.Fatalf("a secret no container uses yet: %v", err)
	}
	p1, err := client.For[*v1.Pod](admin).Get(ctx, "default", "p1")
	if err != nil {
		t.Fatal(err)
	}
	p1.Spec.EphemeralContainers = []*v1.EphemeralContainer{{Name: "debugger", Image: "busybox",
		Env:     []*v1.EnvVar{{Name: "K", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.KeySelector{Name: "debug-env", Key: "k"}}}},
		EnvFrom: []*v1.EnvFromSource{{ConfigMapRef: &v1.LocalObjectReference{Name: "debug-cm"}}}}}
	if _, err := admin.UpdateEphemeralContainers(ctx, p1); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Get(ctx, "default", "debug-env"); err != nil {
		t.Errorf("own pod's ephemeral container's env secret: %v", err)
	}
	if _, err := cms.Get(ctx, "default", "debug-cm"); err != nil {
		t.Errorf("own pod's ephemeral container's envFrom configmap: %v", err)
	}
	if _, err := client.For[*v1.Secret](s.ClientAs("node-n2")).Get(ctx, "default", "debug-env"); !isForbidden(err) {
		t.Errorf("another node reads the ephemeral container's secret: %v", err)
	}
	// Nodes: only its own.
	nodes := client.For[*v1.Node](n1)
	if _, err := nodes.Mutate(ctx, "", "n1", true, func(n *v1.Node) error {
		n.Status = &v1.NodeStatus{Capacity: map[string]string{"cpu": "2"}}
		return nil
	}); err != nil {
		t.Fatalf("own node: %v", err)
	}
	if _, err := nodes.Mutate(ctx, "", "n2", false, func(n *v1.Node) error { n.Spec = &v1.NodeSpec{Unschedulable: true}; return nil }); !isForbidden(err) {
		t.Fatalf("other node: %v", err)
	}
	// Even cluster-admin rights through RBAC do not widen a node.
	if _, err := client.For[*v1.ClusterRoleBinding](admin).Create(ctx, &v1.ClusterRoleBinding{
		Metadata: &v1.ObjectMeta{Name: "n1-admin"},
		Subjects: []*v1.RBACSubject{{Kind: "User", Name: "system:node:n1"}, {Kind: "User", Name: "probe"}},
		RoleRef:  &v1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"},
	}); err != nil {
		t.Fatal(err)
	}
	// Once the binding is in force (it is for "probe"), node-1 is still limited.
	review := v1.NewAuthClient(admin.Conn())
	wait.Eventually(t, 30*time.Second, "probe allowed to get secrets", func() error {
		r, err := review.Review(ctx, &v1.AccessReviewRequest{Verb: "get", Resource: "secrets", Namespace: "default", AsUser: "probe"})
		if err == nil && !r.Allowed {
			err = fmt.Errorf("not allowed: %s", r.Reason)
		}
		return err
	})
	if _, err := secrets.Get(ctx, "default", "s2"); !isForbidden(err) {
		t.Fatalf("RBAC widened a node: %v", err)
	}
}

func TestJoinTokenOnceAndExpiry(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	var shortExp string
	mk := func(ttl int64) string {
		t.Helper()
		r, err := v1.NewAuthClient(s.Client.Conn()).CreateToken(ctx, &v1.CreateTokenRequest{Type: "join", TtlSeconds: ttl})
		if err != nil {
			t.Fatal(err)
		}
		shortExp = r.Expiration
		return r.Token
	}
	tok, short := mk(3600), mk(1)
	anon := v1.NewAuthClient(s.ClientAs("").Conn())
	key, _ := pki.NewKey()
	csr, _ := pki.NewCSR(key, pki.Subject{User: "system:node:n3", Groups: []string{"system:nodes"}})
	resp, err := anon.JoinNode(ctx, &v1.JoinNodeRequest{Token: tok, NodeName: "n3", Csr: csr})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	cert, err := pki.ParseCertPEM(resp.Certificate)
	if err != nil || cert.Subject.CommonName != "system:node:n3" {
		t.Fatalf("cert: %v %v", err, cert)
	}
	if _, err := anon.JoinNode(ctx, &v1.JoinNodeRequest{Token: tok, NodeName: "n3", Csr: csr}); !errors.Is(apierrors.FromGRPC(err), apierrors.ErrUnauthenticated) {
		t.Fatalf("second use: %v", err)
	}
	csr4, _ := pki.NewCSR(key, pki.Subject{User: "system:node:n4", Groups: []string{"system:nodes"}})
	exp, _ := time.Parse(time.RFC3339, shortExp)
	wait.Eventually(t, 30*time.Second, "the short token's expiration", func() error {
		if time.Now().Before(exp) {
			return fmt.Errorf("not yet %s", shortExp)
		}
		return nil
	})
	if _, err := anon.JoinNode(ctx, &v1.JoinNodeRequest{Token: short, NodeName: "n4", Csr: csr4}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("join with an expired token: %v", err)
	}
	// A CSR for another identity than the node named is refused.
	bad, _ := pki.NewCSR(key, pki.Subject{User: "admin", Groups: []string{"system:masters"}})
	if _, err := anon.JoinNode(ctx, &v1.JoinNodeRequest{Token: mk(3600), NodeName: "n5", Csr: bad}); !isForbidden(apierrors.FromGRPC(err)) {
		t.Fatalf("privilege escalation through CSR: %v", err)
	}
}

func TestUserTokenRevocation(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	secrets := client.For[*v1.Secret](s.Client)
	r, err := v1.NewAuthClient(s.Client.Conn()).CreateToken(ctx, &v1.CreateTokenRequest{Type: "user", User: "tom", Groups: []string{"system:masters"}})
	if err != nil {
		t.Fatal(err)
	}
	tom, _ := client.New(client.Config{Server: s.Addr(), TLS: mustTLS(t, s, ""), Token: r.Token})
	defer tom.Close()
	who, err := v1.NewAuthClient(tom.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{})
	if err != nil || who.Name != "tom" {
		t.Fatalf("whoami: %v %v", err, who)
	}
	if _, err := secrets.Delete(ctx, "kube-system", "token-"+r.Id, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v1.NewAuthClient(tom.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); !errors.Is(apierrors.FromGRPC(err), apierrors.ErrUnauthenticated) {
		t.Fatalf("revoked token still works: %v", err)
	}
}

func TestSecretsEncryptedAtRestAndAudit(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "keys")
	_ = os.WriteFile(keyFile, []byte("k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600)
	enc, err := storage.LoadEncryption(keyFile, "secrets")
	if err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	s := apiservertest.StartSecure(t, func(c *apiserver.Config) { c.Encryption = enc; c.Auth.AuditLogPath = auditPath })
	ctx := ctxT(t)
	secrets := client.For[*v1.Secret](s.Client)
	if _, err := secrets.Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "hunter2-very-secret"}}); err != nil {
		t.Fatal(err)
	}
	raw, err := s.Etcd().Get(ctx, "/registry/secrets/default/db")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v", err)
	}
	if bytes.Contains(raw.Kvs[0].Value, []byte("hunter2")) || !bytes.HasPrefix(raw.Kvs[0].Value, []byte("tugboat:enc:aesgcm:v2:k1:")) {
		t.Fatalf("secret stored in plaintext: %q", raw.Kvs[0].Value)
	}
	got, err := secrets.Get(ctx, "default", "db")
	if err != nil || string(got.Data["password"]) != "hunter2-very-secret" {
		t.Fatalf("read back: %v %v", err, got)
	}
	// ConfigMaps are not encrypted.
	if _, err := client.For[*v1.ConfigMap](s.Client).Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": "plain-value"}}); err != nil {
		t.Fatal(err)
	}
	rawCM, _ := s.Etcd().Get(ctx, "/registry/configmaps/default/c", clientv3.WithLimit(1))
	if !bytes.Contains(rawCM.Kvs[0].Value, []byte("plain-value")) {
		t.Fatal("configmap unexpectedly transformed")
	}
	audit, _ := os.ReadFile(auditPath)
	if !bytes.Contains(audit, []byte(`"user":"admin"`)) || !bytes.Contains(audit, []byte(`"verb":"Create"`)) || !bytes.Contains(audit, []byte(`"name":"db"`)) {
		t.Fatalf("audit log: %s", audit)
	}
}

// TestEtcdctlSeesNoPlaintext reads a Secret back with Debian's etcdctl from
// a real etcd process, as an operator would.
func TestEtcdctlSeesNoPlaintext(t *testing.T) {
	etcdctl, err := exec.LookPath("etcdctl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("etcdctl missing in CI: hack/install-deps.sh installs etcd-client")
		}
		t.Skip("etcdctl missing: run hack/install-deps.sh (Debian package etcd-client)")
	}
	etcd := startEtcdProcess(t, t.TempDir())
	keyFile := filepath.Join(t.TempDir(), "keys")
	_ = os.WriteFile(keyFile, []byte("k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600)
	enc, err := storage.LoadEncryption(keyFile, "secrets")
	if err != nil {
		t.Fatal(err)
	}
	s := apiservertest.StartSecure(t, etcd.Use(t), func(c *apiserver.Config) { c.Encryption = enc })
	ctx := ctxT(t)
	if _, err := client.For[*v1.Secret](s.Client).Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "hunter2-very-secret"}}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(etcdctl, "--endpoints", etcd.URL, "--cacert", etcd.file(pki.EtcdCACert),
		"--cert", etcd.file(pki.EtcdClientCert), "--key", etcd.file(pki.EtcdClientKey), "get", "/registry/secrets/default/db")
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("etcdctl: %v: %s", err, out)
	}
	if !bytes.Contains(out, []byte("tugboat:enc:aesgcm:v2:k1:")) || bytes.Contains(out, []byte("hunter2")) {
		t.Fatalf("etcdctl shows: %q", out)
	}
}
