package kubeapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
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
	// kubectl's Apply entry; the deployment controller's writes may have
	// added Update entries (the revision annotation, status).
	var applies []*v1.ManagedFieldsEntry
	for _, m := range d.Metadata.ManagedFields {
		if m.Operation == "Apply" {
			applies = append(applies, m)
		}
	}
	if len(applies) != 1 || applies[0].Manager != "kubectl" || applies[0].Operation != "Apply" || applies[0].ApiVersion != "apps/v1" {
		t.Fatalf("managedFields %v", d.Metadata.ManagedFields)
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

// managerEntry is the managedFields entry of manager for subresource sub
// (nil if none).
func managerEntry(obj v1.Object, manager, sub string) *v1.ManagedFieldsEntry {
	for _, m := range obj.GetMetadata().GetManagedFields() {
		if m.Manager == manager && m.Subresource == sub {
			return m
		}
	}
	return nil
}

// owns reports whether entry's fieldsV1 holds the path (f:metadata,
// f:labels, f:tier).
func owns(e *v1.ManagedFieldsEntry, path ...string) bool {
	if e == nil || e.FieldsV1 == nil {
		return false
	}
	m := e.FieldsV1.AsMap()
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return false
		}
		m = next
	}
	return true
}

// testKubectlManagedFieldsUpdates: writes that are not applies are
// recorded as Kubernetes records them — an Update entry of the request's
// fieldManager (kubectl-create, kubectl-label, kubectl-patch) or of the
// client's user agent, per subresource, owning the fields it changed — so
// a field another manager changed makes the next apply conflict with that
// manager, as in Kubernetes; a no-op write changes nothing; a bad
// fieldManager is refused naming it, on both doors.
func testKubectlManagedFieldsUpdates(t *testing.T, e *env) {
	ctx := context.Background()
	e.kubectl(t, "create", "deployment", "mf", "--image=tugboat.local/busybox:latest", "--replicas=1", "--", "sleep", "3600")
	d := e.deployment(t, "mf")
	create := managerEntry(d, "kubectl-create", "")
	if create == nil || create.Operation != "Update" || create.ApiVersion != "apps/v1" || create.Time == nil ||
		!owns(create, "f:spec", "f:replicas") || !owns(create, "f:spec", "f:template", "f:spec", "f:containers") || owns(create, "f:status") {
		t.Fatalf("after kubectl create, managedFields %v", d.Metadata.ManagedFields)
	}
	e.kubectl(t, "label", "deploy", "mf", "tier=web")
	d = e.deployment(t, "mf")
	if l := managerEntry(d, "kubectl-label", ""); !owns(l, "f:metadata", "f:labels", "f:tier") || owns(l, "f:spec") {
		t.Fatalf("after kubectl label, managedFields %v", d.Metadata.ManagedFields)
	}

	// An apply, then another manager's patch of a field it set: the
	// re-apply conflicts with that manager, nothing changes.
	dir := t.TempDir()
	manifest := write(t, dir, "mf2.yaml", strings.NewReplacer("REPLICAS", "2", "name: ssa", "name: mf2", "app: ssa", "app: mf2").Replace(ssaDeployment))
	e.kubectl(t, "apply", "--server-side", "-f", manifest)
	e.kubectl(t, "patch", "deploy", "mf2", "-p", `{"spec":{"replicas":4}}`)
	d = e.deployment(t, "mf2")
	if p := managerEntry(d, "kubectl-patch", ""); p == nil || p.Operation != "Update" || !owns(p, "f:spec", "f:replicas") {
		t.Fatalf("after kubectl patch, managedFields %v", d.Metadata.ManagedFields)
	}
	if owns(managerEntry(d, "kubectl", ""), "f:spec", "f:replicas") {
		t.Errorf("the applier still owns spec.replicas after another manager changed it")
	}
	out, err := e.kubectlAs(t, e.admin, "", "apply", "--server-side", "-f", manifest)
	if want := `conflict with "kubectl-patch" using apps/v1: .spec.replicas`; err == nil || !strings.Contains(out, want) {
		t.Fatalf("re-apply after kubectl patch: %v\n%s\nwant %s", err, out, want)
	}
	if n := e.deployment(t, "mf2").Spec.GetReplicas(); n != 4 {
		t.Errorf("the refused re-apply changed replicas to %d", n)
	}

	// The scale subresource is its own entry.
	e.kubectl(t, "scale", "deploy", "mf2", "--replicas=3")
	if s := managerEntry(e.deployment(t, "mf2"), "kubectl", "scale"); !owns(s, "f:spec", "f:replicas") {
		t.Errorf("after kubectl scale, managedFields %v", e.deployment(t, "mf2").Metadata.ManagedFields)
	}

	// gRPC: no fieldManager is the user agent's prefix ("test-admin" of
	// the apiservertest client), a status write is a status entry.
	dc := client.For[*v1.Deployment](e.srv.Client)
	d = e.deployment(t, "mf")
	d.Metadata.Annotations = map[string]string{"note": "grpc"}
	if _, err := dc.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	d = e.deployment(t, "mf")
	var ua string
	for _, m := range d.Metadata.ManagedFields {
		if owns(m, "f:metadata", "f:annotations", "f:note") {
			ua = m.Manager
		}
	}
	if ua == "" || strings.ContainsAny(ua, "/ ") {
		t.Errorf("a gRPC update without fieldManager: managedFields %v", d.Metadata.ManagedFields)
	}

	// A no-op replace (no resourceVersion: the controller may write in
	// between) records nothing for kubectl-replace.
	js := e.kubectl(t, "get", "deploy", "mf", "-o", "json", "--show-managed-fields")
	var obj map[string]any
	if err := json.Unmarshal([]byte(js), &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj["metadata"].(map[string]any), "resourceVersion")
	body, _ := json.Marshal(obj)
	e.kubectl(t, "replace", "-f", write(t, dir, "mf.json", string(body)))
	if r := managerEntry(e.deployment(t, "mf"), "kubectl-replace", ""); r != nil {
		t.Errorf("a no-op replace recorded %v", r)
	}

	// A bad fieldManager: 422 naming it, nothing stored.
	obj["metadata"].(map[string]any)["labels"] = map[string]any{"app": "mf", "bad": "stored"}
	body, _ = json.Marshal(obj)
	code, resp := e.do(t, "PUT", "/apis/apps/v1/namespaces/default/deployments/mf?fieldManager="+strings.Repeat("m", 129), "application/json", body)
	if code != 422 || !strings.Contains(resp, "fieldManager") || !strings.Contains(resp, "128") {
		t.Errorf("PUT with a 129-character fieldManager: %d %s", code, resp)
	}
	code, resp = e.do(t, "PATCH", "/apis/apps/v1/namespaces/default/deployments/mf?fieldManager=a%07b", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"bad":"stored"}}}`))
	if code != 422 || !strings.Contains(resp, "fieldManager") || !strings.Contains(resp, "invalid character") {
		t.Errorf("PATCH with a control character in fieldManager: %d %s", code, resp)
	}
	if l := e.deployment(t, "mf").Metadata.Labels["bad"]; l != "" {
		t.Errorf("a refused write stored label bad=%s", l)
	}
	e.kubectl(t, "delete", "deploy", "mf", "mf2")
}
