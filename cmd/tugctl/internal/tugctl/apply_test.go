package tugctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/revision"
)

func docsFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "api", "manifest", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// The Kubernetes docs' simple Pod applies unchanged and reads back with a
// resourceVersion; applying it again is "unchanged", a new image
// "configured".
func TestApplyDocsPod(t *testing.T) {
	e := newEnv(t)
	pod := docsFile(t, "simple-pod.yaml")
	r := mustOK(t, e.run("apply", "-f", pod))
	if r.out != "pod/nginx created\n" {
		t.Errorf("apply printed %q", r.out)
	}
	r = mustOK(t, e.run("get", "pods", "-o", "yaml"))
	for _, want := range []string{"apiVersion: v1", "kind: List", "kind: Pod", "name: nginx", "image: nginx:1.14.2", "containerPort: 80", "resourceVersion: \"", "phase: Pending"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("get -o yaml lacks %q:\n%s", want, r.out)
		}
	}
	r = mustOK(t, e.run("get", "pod", "nginx", "-o", "json"))
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.out), &obj); err != nil {
		t.Fatalf("get -o json: %v\n%s", err, r.out)
	}
	if obj["kind"] != "Pod" || obj["metadata"].(map[string]any)["resourceVersion"] == "" {
		t.Errorf("get -o json = %v", obj)
	}

	if r := mustOK(t, e.run("apply", "-f", pod)); r.out != "pod/nginx unchanged\n" {
		t.Errorf("second apply printed %q", r.out)
	}
	data, _ := os.ReadFile(pod)
	newer := strings.Replace(string(data), "nginx:1.14.2", "nginx:1.16.1", 1)
	if r := mustOK(t, e.runIn(newer, "apply", "-f", "-")); r.out != "pod/nginx configured\n" {
		t.Errorf("apply of a new image printed %q", r.out)
	}
	p, err := client.For[*v1.Pod](e.c).Get(ctxT(t), "default", "nginx")
	if err != nil || p.Spec.Containers[0].Image != "nginx:1.16.1" {
		t.Fatalf("pod after apply: %v %v", p, err)
	}
	// What get -o yaml prints applies back; the second time it is unchanged.
	saved := mustOK(t, e.run("get", "pods", "-o", "yaml")).out
	mustOK(t, e.runIn(saved, "apply", "-f", "-"))
	saved = mustOK(t, e.run("get", "pod", "nginx", "-o", "yaml")).out
	if r := mustOK(t, e.runIn(saved, "apply", "-f", "-")); r.out != "pod/nginx unchanged\n" {
		t.Errorf("re-apply of get -o yaml printed %q", r.out)
	}
}

// Apply of a deployment: unchanged when only the controller touched it,
// configured on a spec change, labels removed from the manifest removed,
// annotations added by others kept.
func TestApplyDeploymentMergesMetadata(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	data, _ := os.ReadFile(docsFile(t, "nginx-deployment.yaml"))
	withTier := strings.Replace(string(data), "  labels:\n    app: nginx\n", "  labels:\n    app: nginx\n    tier: web\n", 1)
	f := writeFile(t, dir, "d.yaml", withTier)
	if r := mustOK(t, e.run("apply", "-f", f)); r.out != "deployment.apps/nginx-deployment created\n" {
		t.Errorf("apply printed %q", r.out)
	}
	// The deployment controller annotates the deployment and writes status.
	api := client.For[*v1.Deployment](e.c)
	if _, err := api.Mutate(ctxT(t), "default", "nginx-deployment", false, func(d *v1.Deployment) error {
		if d.Metadata.Annotations == nil {
			d.Metadata.Annotations = map[string]string{}
		}
		d.Metadata.Annotations[revision.Annotation] = "1"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if r := mustOK(t, e.run("apply", "-f", f)); r.out != "deployment.apps/nginx-deployment unchanged\n" {
		t.Errorf("re-apply printed %q", r.out)
	}
	// Drop the tier label and scale to 5.
	changed := strings.Replace(string(data), "replicas: 3", "replicas: 5", 1)
	writeFile(t, dir, "d.yaml", changed)
	if r := mustOK(t, e.run("apply", "-f", dir)); r.out != "deployment.apps/nginx-deployment configured\n" {
		t.Errorf("apply of a change printed %q", r.out)
	}
	d, err := api.Get(ctxT(t), "default", "nginx-deployment")
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.GetReplicas() != 5 || d.Metadata.Labels["tier"] != "" || d.Metadata.Labels["app"] != "nginx" {
		t.Errorf("deployment after apply: replicas %d labels %v", d.Spec.GetReplicas(), d.Metadata.Labels)
	}
	if d.Metadata.Annotations[revision.Annotation] != "1" || d.Metadata.Annotations[v1.LastAppliedAnnotation] == "" {
		t.Errorf("annotations after apply: %v", d.Metadata.Annotations)
	}
	if d.Metadata.Generation != 2 {
		t.Errorf("generation = %d, want 2", d.Metadata.Generation)
	}
}

// A document with a mistake is refused, named by file, document, object
// and field, and costs only itself: the other documents, in the same file
// and in others, are applied, the exit status is 1 — as kubectl apply.
// A document whose first character is "{" is YAML too (a flow mapping).
func TestApplyRefusesEachBadDocument(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "a-good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, labels: {app: x}}\ndata: {a: b}\n")
	bad := writeFile(t, dir, "b-bad.yaml", `apiVersion: v1
kind: Namespace
metadata: {name: ns1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: web:1
        imagePullPolicyy: Always
---
{apiVersion: v1, kind: ConfigMap, metadata: {name: flow}, data: {port: 8080}}
---
apiVersion: v1
kind: Pod
metadata: {generateName: x-}
`)
	r := e.run("apply", "-f", dir)
	mustFail(t, r, bad+`: document 2 (Deployment web): spec.template.spec.containers[0].imagePullPolicyy: unknown field`,
		bad+`: document 4 (Pod): metadata.name: required`)
	for _, want := range []string{"configmap/good created", "namespace/ns1 created", "configmap/flow created"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q: %v", want, r)
		}
	}
	for _, name := range []string{"good", "flow"} {
		if _, err := client.For[*v1.ConfigMap](e.c).Get(ctxT(t), "default", name); err != nil {
			t.Errorf("configmap %s: %v", name, err)
		}
	}
	if _, err := client.For[*v1.Deployment](e.c).Get(ctxT(t), "default", "web"); err == nil {
		t.Error("the refused Deployment was stored")
	}
	// --prune is not run when a document was refused: its object would
	// look gone from the manifests.
	r = e.run("apply", "-f", dir, "--prune", "-l", "app=x")
	mustFail(t, r, "--prune: skipped, some documents were refused")
	mustFail(t, e.run("apply", "-f", filepath.Join(dir, "missing.yaml")), "missing.yaml: no such file or directory")
	mustFail(t, e.run("apply"), "-f: required")
	mustFail(t, e.runIn("apiVersion: v1\nkind: Pod\nmetadata: {generateName: x-}\n", "apply", "-f", "-"), "<stdin>: document 1 (Pod): metadata.name: required")
	// create goes on past a refused document the same way.
	r = e.runIn("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c2}\ndataa: {a: b}\n", "create", "-f", "-")
	mustFail(t, r, "<stdin>: document 2 (ConfigMap c2): dataa: unknown field")
	if !strings.Contains(r.out, "configmap/c1 created") {
		t.Errorf("create did not go on past the refused document: %v", r)
	}
}

// Server-side refusals name the document and the field; the other objects
// still apply.
func TestApplyServerErrorNamesObject(t *testing.T) {
	e := newEnv(t)
	in := `apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers: [{name: c}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: fine}
`
	r := e.runIn(in, "apply", "-f", "-")
	mustFail(t, r, "<stdin>: document 1 (Pod bad):", "spec.containers[0].image")
	if !strings.Contains(r.out, "configmap/fine created") {
		t.Errorf("the valid object was not applied: %v", r)
	}
}

func TestApplyNamespaces(t *testing.T) {
	e := newEnv(t)
	mustOK(t, e.run("create", "namespace", "web"))
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	mustOK(t, e.runIn(in, "apply", "-n", "web", "-f", "-"))
	if _, err := client.For[*v1.ConfigMap](e.c).Get(ctxT(t), "web", "c"); err != nil {
		t.Errorf("configmap not in namespace web: %v", err)
	}
	other := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: other}\n"
	mustFail(t, e.runIn(other, "apply", "-n", "web", "-f", "-"), `<stdin>: document 1 (ConfigMap c): metadata.namespace "other" does not match the namespace "web" given by --namespace`)
	mustFail(t, e.runIn(strings.Replace(other, "other", "nope", 1), "apply", "-f", "-"), `namespace "nope" not found`)
	// create refuses what exists.
	mustFail(t, e.runIn(in, "create", "-n", "web", "-f", "-"), `configmaps "c" already exists`)
}

// The service's cluster-assigned fields survive a re-apply.
func TestApplyKeepsAssignedFields(t *testing.T) {
	e := newEnv(t)
	svc := docsFile(t, "nodeport-service.yaml")
	mustOK(t, e.run("apply", "-f", svc))
	api := client.For[*v1.Service](e.c)
	before, err := api.Get(ctxT(t), "default", "my-service")
	if err != nil {
		t.Fatal(err)
	}
	if r := mustOK(t, e.run("apply", "-f", svc)); r.out != "service/my-service unchanged\n" {
		t.Errorf("re-apply printed %q", r.out)
	}
	s, _ := api.Get(ctxT(t), "default", "my-service")
	if s.Spec.ClusterIp != before.Spec.ClusterIp || s.Spec.Ports[0].NodePort != 30007 {
		t.Errorf("service after re-apply: %v", s.Spec)
	}
}
