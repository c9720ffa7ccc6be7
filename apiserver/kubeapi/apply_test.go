package kubeapi_test

import (
	"strings"
	"testing"
)

const ssaDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ssa
  labels: {app: ssa}
spec:
  replicas: REPLICAS
  selector:
    matchLabels: {app: ssa}
  template:
    metadata:
      labels: {app: ssa}
    spec:
      containers:
      - name: web
        image: tugboat.local/busybox:latest
        command: ["sleep", "3600"]
`

// testKubectlServerSideApply: the real kubectl's apply --server-side
// creates and changes an object through application/apply-patch+yaml; the
// managedFields name kubectl's manager and its fields; a second manager
// that sets a field the first one owns is refused with Kubernetes'
// conflict (409) and nothing changes, and takes it with --force-conflicts;
// an apply without a fieldManager is refused (422).
func testKubectlServerSideApply(t *testing.T, e *env) {
	dir := t.TempDir()
	manifest := func(replicas string) string {
		return write(t, dir, "ssa-"+replicas+".yaml", strings.Replace(ssaDeployment, "REPLICAS", replicas, 1))
	}
	out := e.kubectl(t, "apply", "--server-side", "-f", manifest("2"))
	if !strings.Contains(out, "deployment.apps/ssa serverside-applied") {
		t.Fatalf("apply --server-side: %s", out)
	}
	d := e.deployment(t, "ssa")
	if d.Spec.GetReplicas() != 2 || d.Spec.Template.Spec.Containers[0].Image != "tugboat.local/busybox:latest" {
		t.Fatalf("after apply: %v", d.Spec)
	}
	mf := d.Metadata.ManagedFields
	if len(mf) != 1 || mf[0].Manager != "kubectl" || mf[0].Operation != "Apply" || mf[0].ApiVersion != "apps/v1" {
		t.Fatalf("managedFields %v", mf)
	}
	yamlOut := e.kubectl(t, "get", "deploy", "ssa", "-o", "yaml", "--show-managed-fields")
	for _, want := range []string{"manager: kubectl", "operation: Apply", "f:replicas: {}", `k:{"name":"web"}:`} {
		if !strings.Contains(yamlOut, want) {
			t.Errorf("get -o yaml --show-managed-fields lacks %q:\n%s", want, yamlOut)
		}
	}
	// The same manager changes its own field freely.
	e.kubectl(t, "apply", "--server-side", "-f", manifest("3"))
	if n := e.deployment(t, "ssa").Spec.GetReplicas(); n != 3 {
		t.Fatalf("re-apply: replicas %d, want 3", n)
	}
	// Another manager: a conflict on spec.replicas, nothing stored.
	out, err := e.kubectlAs(t, e.admin, "", "apply", "--server-side", "--field-manager=ci", "-f", manifest("5"))
	want := `Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("apply by another manager: %v\n%s\nwant %s", err, out, want)
	}
	if n := e.deployment(t, "ssa").Spec.GetReplicas(); n != 3 {
		t.Fatalf("a refused apply changed replicas to %d", n)
	}
	// --force-conflicts takes the field.
	e.kubectl(t, "apply", "--server-side", "--field-manager=ci", "--force-conflicts", "-f", manifest("5"))
	d = e.deployment(t, "ssa")
	if d.Spec.GetReplicas() != 5 {
		t.Fatalf("forced apply: replicas %d", d.Spec.GetReplicas())
	}
	managers := map[string]bool{}
	for _, m := range d.Metadata.ManagedFields {
		managers[m.Manager] = true
	}
	if !managers["ci"] || !managers["kubectl"] {
		t.Errorf("after the forced apply, managers %v", managers)
	}
	// Now kubectl's manager is the one refused on replicas.
	out, err = e.kubectlAs(t, e.admin, "", "apply", "--server-side", "-f", manifest("3"))
	if err == nil || !strings.Contains(out, `conflict with "ci": .spec.replicas`) {
		t.Errorf("kubectl after ci took replicas: %v\n%s", err, out)
	}
	// fieldManager is required over HTTP.
	code, body := e.do(t, "PATCH", "/apis/apps/v1/namespaces/default/deployments/ssa", "application/apply-patch+yaml", []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ssa}\n"))
	if code != 422 || !strings.Contains(body, "fieldManager") || !strings.Contains(body, "is required for apply patch") {
		t.Errorf("apply without fieldManager: %d %s", code, body)
	}
	e.kubectl(t, "delete", "deploy", "ssa")
}
