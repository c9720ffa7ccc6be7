package apiserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// TestImpersonation: the Kubernetes door's Impersonate-User and
// Impersonate-Group headers (kubectl --as, --as-group) act as that user
// only when the caller holds impersonate on the user (the service
// account) and each group; the request is then authorized as the
// impersonated user, and the audit log names both. A refusal is a 403
// naming the caller and what it may not impersonate, and is audited.
func TestImpersonation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s := apiservertest.StartSecure(t, apiservertest.WithKubeAPI, withTokens(t, "vic", "jane"), func(c *apiserver.Config) { c.Auth.AuditLogPath = path })
	ctx := ctxT(t)
	// vic may impersonate jane and the group devs, nothing else; jane
	// may edit in default, vic nothing.
	if _, err := client.For[*v1.ClusterRole](s.Client).Create(ctx, &v1.ClusterRole{Metadata: &v1.ObjectMeta{Name: "impersonate-jane"}, Rules: []*v1.PolicyRule{
		rule([]string{""}, []string{"users"}, []string{"impersonate"}, "jane"),
		rule([]string{""}, []string{"groups"}, []string{"impersonate"}, "devs"),
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.ClusterRoleBinding](s.Client).Create(ctx, &v1.ClusterRoleBinding{Metadata: &v1.ObjectMeta{Name: "vic-impersonates"},
		Subjects: []*v1.RBACSubject{{Kind: "User", Name: "vic"}}, RoleRef: &v1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "impersonate-jane"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.RoleBinding](s.Client).Create(ctx, roleBinding("default", "jane-edit", "jane", "ClusterRole", "edit")); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, s, "vic", "impersonate", "users", "", "jane")
	waitAllowed(t, s, "jane", "create", "configmaps", "default", "")

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: mustTLS(t, s, "")}}
	do := func(method, path, body string, headers ...string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "https://"+s.KubeAddr()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer vic-token")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Add(headers[i], headers[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	cm := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`
	}

	// vic alone may not create; as jane he may, and the audit line names both.
	if code, st := do("POST", cms, cm("by-vic")); code != 403 {
		t.Fatalf("vic without impersonation: %d %v", code, st)
	}
	if code, st := do("POST", cms, cm("by-jane"), "Impersonate-User", "jane"); code != 201 {
		t.Fatalf("vic as jane: %d %v", code, st)
	}
	l := waitAudit(t, path, map[string]string{"verb": "Create", "name": "by-jane", "user": "vic", "impersonatedUser": "jane", "code": "OK"})
	if !strings.Contains(fmt.Sprint(l["impersonatedGroups"]), "system:authenticated") {
		t.Errorf("the impersonated user's groups: %v", l)
	}
	// As jane in devs: allowed; as jane in system:masters: refused.
	if code, st := do("POST", cms, cm("by-devs"), "Impersonate-User", "jane", "Impersonate-Group", "devs"); code != 201 {
		t.Fatalf("vic as jane in devs: %d %v", code, st)
	}
	refusals := []struct {
		headers []string
		code    int
		message string
	}{
		{[]string{"Impersonate-User", "jane", "Impersonate-Group", "system:masters"}, 403,
			`groups "system:masters" is forbidden: User "vic" cannot impersonate resource "groups" in API group "" at the cluster scope`},
		{[]string{"Impersonate-User", "admin"}, 403,
			`users "admin" is forbidden: User "vic" cannot impersonate resource "users" in API group "" at the cluster scope`},
		{[]string{"Impersonate-User", "system:serviceaccount:default:robot"}, 403,
			`serviceaccounts "robot" is forbidden: User "vic" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "default"`},
		{[]string{"Impersonate-Group", "devs"}, 400, "without impersonating a user"},
		{[]string{"Impersonate-User", "jane", "Impersonate-Uid", "1234"}, 400, "Impersonate-Uid"},
		{[]string{"Impersonate-User", "jane", "Impersonate-Extra-Scopes", "view"}, 400, "Impersonate-Extra-Scopes"},
	}
	for _, r := range refusals {
		code, st := do("POST", cms, cm("refused"), r.headers...)
		if msg, _ := st["message"].(string); code != r.code || !strings.Contains(msg, r.message) {
			t.Errorf("impersonating %v: %d %v; want %d %q", r.headers, code, st, r.code, r.message)
		}
	}
	if _, err := client.For[*v1.ConfigMap](s.Client).Get(ctx, "default", "refused"); err == nil {
		t.Error("a refused impersonation created its configmap")
	}
	waitAudit(t, path, map[string]string{"verb": "impersonate", "kind": "User", "name": "admin", "user": "vic", "code": "PermissionDenied"})
	// Reads are authorized as the impersonated user too: jane may not
	// read secrets (edit may; view, bound here, may not).
	if code, _ := do("GET", "/api/v1/namespaces/default/secrets", "", "Impersonate-User", "jane"); code != 200 {
		t.Errorf("vic as jane listing secrets (edit may): %d", code)
	}
	if code, _ := do("GET", "/api/v1/nodes", "", "Impersonate-User", "jane"); code != 403 {
		t.Errorf("vic as jane listing nodes (edit may not): %d", code)
	}
}
