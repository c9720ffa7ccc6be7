package tugctl

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// newSecureEnv is newEnv on an apiserver with TLS, client certificates and
// RBAC on, and a config file in the context form whose current context is
// the admin (system:masters) with certificates from the server's PKI dir.
func newSecureEnv(t *testing.T) *env {
	t.Helper()
	srv := apiservertest.StartSecure(t)
	e := &env{t: t, srv: srv, c: srv.Client, home: t.TempDir()}
	pkiDir := srv.PKIDir
	cfg := fmt.Sprintf(`clusters:
- name: test
  server: %s
  caFile: %s
users:
- name: admin
  certFile: %s
  keyFile: %s
contexts:
- name: admin
  cluster: test
  user: admin
current-context: admin
`, srv.Addr(), filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err := mkdir(filepath.Join(e.home, ".tugboat")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.home, ".tugboat"), "config", cfg)
	return e
}

// userContext makes a user token for user (in groups) and a context named
// after the user that presents it.
func (e *env) userContext(user string, groups ...string) string {
	e.t.Helper()
	args := []string{"token", "create", "--user", user, "--description", "for " + user}
	if len(groups) > 0 {
		args = append(args, "--groups", strings.Join(groups, ","))
	}
	r := mustOK(e.t, e.run(args...))
	token := strings.TrimSpace(r.out)
	if !strings.Contains(r.err, "this is the only time it is printed") {
		e.t.Errorf("user token stderr: %q", r.err)
	}
	mustOK(e.t, e.run("config", "set-credentials", user, "--token", token))
	mustOK(e.t, e.run("config", "set-context", user, "--cluster", "test", "--user", user))
	return token
}

func TestAuthWhoAmIAndCanI(t *testing.T) {
	e := newSecureEnv(t)
	r := mustOK(t, e.run("auth", "whoami"))
	want := "ATTRIBUTE   VALUE\nUsername    admin\nGroups      [system:masters system:authenticated]\nMethod      certificate\n"
	if r.out != want {
		t.Errorf("whoami printed\n%s\nwant\n%s", r.out, want)
	}
	e.userContext("vera")
	r = mustOK(t, e.run("--context", "vera", "auth", "whoami"))
	if got := row(t, r.out, "Username"); got[1] != "vera" {
		t.Errorf("vera's whoami:\n%s", r.out)
	}
	if got := row(t, r.out, "Method"); got[1] != "token" {
		t.Errorf("vera's whoami:\n%s", r.out)
	}

	// Before any binding: no, exit 1; -v says why.
	r = e.run("--context", "vera", "auth", "can-i", "list", "pods")
	if r.code != 1 || r.out != "no\n" || r.err != "" {
		t.Errorf("vera can-i list pods: %v", r)
	}
	r = e.run("--context", "vera", "auth", "can-i", "list", "pods", "-v")
	if r.code != 1 || !strings.HasPrefix(r.out, `no - pods is forbidden: User "vera" cannot list resource "pods" in API group "" in the namespace "default"`) {
		t.Errorf("vera can-i -v: %v", r)
	}
	if r := e.run("auth", "can-i", "list", "pods"); r.code != 0 || r.out != "yes\n" {
		t.Errorf("admin can-i list pods: %v", r)
	}
	if r := e.run("auth", "can-i", "list", "pods", "--as", "vera"); r.code != 1 || r.out != "no\n" {
		t.Errorf("admin can-i --as vera: %v", r)
	}

	// Bind vera to view: reads yes, writes and secrets no.
	mustCreate(t, e.c, &v1.ClusterRoleBinding{
		Metadata: &v1.ObjectMeta{Name: "vera-view"},
		Subjects: []*v1.RBACSubject{{Kind: "User", Name: "vera"}},
		RoleRef:  &v1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
	})
	// The authorizer reads bindings from its watch cache: wait until it
	// has this one, as a user would retry.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r := e.run("--context", "vera", "auth", "can-i", "list", "pods"); r.code == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "pods"}, "yes"},
		{[]string{"get", "pods/log", "web", "-n", "kube-system"}, "yes"},
		{[]string{"get", "deploy", "web"}, "yes"},
		{[]string{"delete", "pods"}, "no"},
		{[]string{"create", "pods/exec"}, "no"},
		{[]string{"get", "secrets"}, "no"},
	} {
		r := e.run(append([]string{"--context", "vera", "auth", "can-i"}, tc.args...)...)
		if strings.TrimSpace(r.out) != tc.want || (r.code == 0) != (tc.want == "yes") {
			t.Errorf("vera can-i %v: %v, want %s", tc.args, r, tc.want)
		}
	}
	if r := e.run("auth", "can-i", "get", "secrets", "--as", "ann", "--as-group", "system:masters"); r.out != "yes\n" {
		t.Errorf("--as-group system:masters: %v", r)
	}
	mustFail(t, e.run("--context", "vera", "auth", "can-i", "list", "pods", "--as", "admin"), `user "vera" cannot impersonate "admin"`)
	mustFail(t, e.run("auth", "can-i", "list", "pdos"), `the server doesn't have a resource type "pdos"`)
	mustFail(t, e.run("auth", "can-i", "list", "pods", "--as-group", "g"), "--as-group: needs --as USER")
	mustFail(t, e.run("auth", "can-i", "list"), "accepts between 2 and 3 arg(s)")

	// Writing RBAC objects: a namespace admin may create roles, but only
	// within what she holds, and can-i says so; she may not bind
	// cluster-admin nor escalate.
	mustCreate(t, e.c, &v1.RoleBinding{
		Metadata: &v1.ObjectMeta{Name: "vera-admin", Namespace: "default"},
		Subjects: []*v1.RBACSubject{{Kind: "User", Name: "vera"}},
		RoleRef:  &v1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"},
	})
	wait.Eventually(t, 10*time.Second, "vera's admin binding in force", func() error {
		if r := e.run("auth", "can-i", "create", "roles", "--as", "vera"); r.code != 0 {
			return fmt.Errorf("%v", r)
		}
		return nil
	})
	r = e.run("auth", "can-i", "create", "roles", "--as", "vera")
	if r.out != "yes\n" || !strings.Contains(r.err, "Warning: only roles granting permissions the user already holds (no escalate verb on roles)") {
		t.Errorf("can-i create roles as a namespace admin: %v", r)
	}
	r = e.run("auth", "can-i", "create", "rolebindings", "--as", "vera", "-v")
	if !strings.HasPrefix(r.out, "yes - only to roles and clusterroles whose permissions the user holds") {
		t.Errorf("can-i create rolebindings -v: %v", r)
	}
	for _, args := range [][]string{{"escalate", "roles"}, {"bind", "clusterroles", "cluster-admin"}} {
		if r := e.run(append([]string{"auth", "can-i", "--as", "vera"}, args...)...); r.code != 1 || r.out != "no\n" {
			t.Errorf("vera can-i %v: %v", args, r)
		}
	}
	// Resources RBAC names that are not kinds: impersonating (what a user
	// token needs) and revoking certificates.
	for _, args := range [][]string{{"impersonate", "users", "ci"}, {"impersonate", "groups", "system:masters"}, {"revoke", "certificates"}} {
		if r := e.run(append([]string{"auth", "can-i", "--as", "vera"}, args...)...); r.code != 1 || r.out != "no\n" {
			t.Errorf("vera can-i %v: %v", args, r)
		}
		if r := e.run(append([]string{"auth", "can-i"}, args...)...); r.code != 0 || r.out != "yes\n" {
			t.Errorf("admin can-i %v: %v", args, r)
		}
	}
	if r := e.run("auth", "can-i", "bind", "clusterroles", "view", "--as", "vera"); r.code != 0 || r.out != "yes\n" || !strings.Contains(r.err, "holds every permission of clusterrole \"view\"") {
		t.Errorf("vera can-i bind view (she holds it): %v", r)
	}
}
