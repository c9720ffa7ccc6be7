package tugctl

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// webDeployment is a deployment of two containers in namespace ns.
func webDeployment(ns string) *v1.Deployment {
	sel := map[string]string{"app": "web"}
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: &v1.DeploymentSpec{
			Replicas: proto.Int32(2),
			Selector: &v1.LabelSelector{MatchLabels: sel},
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Labels: sel},
				Spec: &v1.PodSpec{Containers: []*v1.Container{
					{Name: "app", Image: "app:v1", Env: []*v1.EnvVar{{Name: "MODE", Value: "prod"}}},
					{Name: "side", Image: "side:v1"},
				}},
			},
		},
	}
}

// TestChangingObjects runs the commands that change stored objects —
// label, annotate, patch, set, edit, apply's three-way merge, --prune,
// diff, kustomize, the dry runs — against one apiserver, a namespace per
// subtest. Each asserts what is stored afterwards, and that a refused
// command stored nothing.
func TestChangingObjects(t *testing.T) {
	e := newEnv(t)
	t.Run("label", func(t *testing.T) { testLabel(t, e.inNamespace(t, "label")) })
	t.Run("annotate", func(t *testing.T) { testAnnotate(t, e.inNamespace(t, "annotate")) })
	t.Run("patch", func(t *testing.T) { testPatch(t, e.inNamespace(t, "patch")) })
	t.Run("set", func(t *testing.T) { testSet(t, e.inNamespace(t, "set")) })
	t.Run("edit", func(t *testing.T) { testEdit(t, e.inNamespace(t, "edit")) })
	t.Run("dry-run", func(t *testing.T) { testDryRun(t, e.inNamespace(t, "dry-run")) })
	t.Run("apply-three-way", func(t *testing.T) { testApplyThreeWay(t, e.inNamespace(t, "three-way")) })
	t.Run("apply-prune", func(t *testing.T) { testApplyPrune(t, e.inNamespace(t, "prune")) })
	t.Run("diff", func(t *testing.T) { testDiff(t, e.inNamespace(t, "diff")) })
	t.Run("kustomize", func(t *testing.T) { testKustomize(t, e.inNamespace(t, "kustomize")) })
	t.Run("create-job", func(t *testing.T) { testCreateJob(t, e.inNamespace(t, "create-job")) })
}

func testLabel(t *testing.T, e *env) {
	mustCreate(t, e.c, webDeployment(e.ns))
	labels := func() map[string]string { return get[*v1.Deployment](t, e.c, e.ns, "web").Metadata.Labels }
	if r := mustOK(t, e.run("label", "deploy", "web", "tier=front")); r.out != "deployment.apps/web labeled\n" {
		t.Errorf("label: %q", r.out)
	}
	if labels()["tier"] != "front" {
		t.Fatalf("labels after label: %v", labels())
	}
	if r := mustOK(t, e.run("label", "deploy/web", "tier=front")); r.out != "deployment.apps/web not labeled\n" {
		t.Errorf("label with the same value: %q", r.out)
	}
	mustFail(t, e.run("label", "deploy", "web", "tier=back", "zone=a"), `'tier' already has a value (front), and --overwrite is false`)
	if l := labels(); l["tier"] != "front" || l["zone"] != "" {
		t.Errorf("a refused label changed the labels: %v", l)
	}
	mustOK(t, e.run("label", "deploy", "web", "tier=back", "--overwrite"))
	if labels()["tier"] != "back" {
		t.Errorf("--overwrite: %v", labels())
	}
	mustFail(t, e.run("label", "deploy", "web", "tier=x", "--overwrite", "--resource-version=1"), "the object has been modified")
	r := mustOK(t, e.run("label", "deploy", "web", "tier-", "nope-"))
	if r.out != "deployment.apps/web unlabeled\n" || r.err != "label \"nope\" not found.\n" {
		t.Errorf("label KEY-: %v", r)
	}
	if _, ok := labels()["tier"]; ok {
		t.Errorf("tier- left the label: %v", labels())
	}
	// Dry runs print and store nothing.
	if r := mustOK(t, e.run("label", "deploy", "web", "env=dev", "--dry-run=server")); r.out != "deployment.apps/web labeled (server dry run)\n" {
		t.Errorf("--dry-run=server: %q", r.out)
	}
	if r := mustOK(t, e.run("label", "deploy", "web", "env=dev", "--dry-run=client", "-o", "jsonpath={.metadata.labels.env}")); r.out != "dev" {
		t.Errorf("--dry-run=client -o jsonpath: %q", r.out)
	}
	if _, ok := labels()["env"]; ok {
		t.Errorf("a dry run stored the label: %v", labels())
	}
	// -l and --all over several objects.
	for _, n := range []string{"p1", "p2", "other"} {
		app := "web"
		if n == "other" {
			app = "db"
		}
		mustCreate(t, e.c, &v1.Pod{Metadata: &v1.ObjectMeta{Name: n, Namespace: e.ns, Labels: map[string]string{"app": app}}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "i"}}}})
	}
	if r := mustOK(t, e.run("label", "pods", "-l", "app=web", "role=web")); r.out != "pod/p1 labeled\npod/p2 labeled\n" {
		t.Errorf("label -l: %q", r.out)
	}
	mustOK(t, e.run("label", "pods", "--all", "swept=yes"))
	for _, n := range []string{"p1", "p2", "other"} {
		l := get[*v1.Pod](t, e.c, e.ns, n).Metadata.Labels
		if l["swept"] != "yes" || (l["role"] == "web") != (n != "other") {
			t.Errorf("pod %s labels: %v", n, l)
		}
	}
	if r := mustOK(t, e.run("label", "pod", "p1", "--list")); r.out != "app=web\nrole=web\nswept=yes\n" {
		t.Errorf("--list: %q", r.out)
	}
	// Bad input names what is wrong and changes nothing.
	before := get[*v1.Deployment](t, e.c, e.ns, "web")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"label", "deploy", "web", "bad key=1"}, `invalid label spec "bad key=1": key "bad key"`},
		{[]string{"label", "deploy", "web", "a=b=c"}, "invalid label spec: a=b=c"},
		{[]string{"label", "deploy", "web", "ok=" + strings.Repeat("v", 64)}, "invalid label spec"},
		{[]string{"label", "deploy", "web", "a=1", "a-"}, `can not both modify and remove the label "a"`},
		{[]string{"label", "deploy", "web"}, "at least one label update is required"},
		{[]string{"label", "deploy", "a=1"}, "name the objects (KIND NAME or KIND/NAME), or select them with -l SELECTOR or --all"},
		{[]string{"label", "deploy", "web", "a=1", "--dry-run=later"}, `invalid argument "later" for "--dry-run"`},
		{[]string{"label", "deploy", "web", "a=1", "-o", "wide"}, `--output "wide"`},
		{[]string{"label", "deploy", "nope", "a=1"}, `deployments.apps "nope" not found`},
		{[]string{"label", "pods", "-l", "app in (", "a=1"}, "-l"},
	} {
		mustFail(t, e.run(tc.args...), tc.want)
	}
	if after := get[*v1.Deployment](t, e.c, e.ns, "web"); after.Metadata.ResourceVersion != before.Metadata.ResourceVersion {
		t.Errorf("a refused label changed the deployment: %v", after.Metadata.Labels)
	}
}

func testAnnotate(t *testing.T, e *env) {
	mustCreate(t, e.c, webDeployment(e.ns))
	dir := t.TempDir()
	annotations := func() map[string]string { return get[*v1.Deployment](t, e.c, e.ns, "web").Metadata.Annotations }
	if r := mustOK(t, e.run("annotate", "deploy", "web", "team=blue", "example.com/owner=ops@example.com")); r.out != "deployment.apps/web annotated\n" {
		t.Errorf("annotate: %q", r.out)
	}
	if a := annotations(); a["team"] != "blue" || a["example.com/owner"] != "ops@example.com" {
		t.Errorf("annotations: %v", a)
	}
	mustFail(t, e.run("annotate", "deploy", "web", "team=red"), `'team' already has a value (blue), and --overwrite is false`)
	// Annotation values are free text; -f names the object.
	f := writeFile(t, dir, "web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
	mustOK(t, e.run("annotate", "-f", f, "team=red", "note=a b: c", "--overwrite"))
	if a := annotations(); a["team"] != "red" || a["note"] != "a b: c" {
		t.Errorf("annotate -f --overwrite: %v", a)
	}
	mustOK(t, e.run("annotate", "deploy", "web", "note-"))
	if _, ok := annotations()["note"]; ok {
		t.Errorf("note- left it: %v", annotations())
	}
	mustFail(t, e.run("annotate", "deploy", "web", "-f", f, "x=1"), "-f and objects named on the command line")
	mustFail(t, e.run("annotate", "deploy", "web", "Bad_/key=1"), `invalid annotation spec "Bad_/key=1"`)
}

func testPatch(t *testing.T, e *env) {
	mustCreate(t, e.c, webDeployment(e.ns))
	dir := t.TempDir()
	dep := func() *v1.Deployment { return get[*v1.Deployment](t, e.c, e.ns, "web") }
	containers := func() []*v1.Container { return dep().Spec.Template.Spec.Containers }

	// Strategic (the default): containers merge by name.
	if r := mustOK(t, e.run("patch", "deploy", "web", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:v2"}]}}}}`)); r.out != "deployment.apps/web patched\n" {
		t.Errorf("patch: %q", r.out)
	}
	if cs := containers(); len(cs) != 2 || cs[0].Image != "app:v2" || cs[1].Image != "side:v1" || cs[0].Env[0].Value != "prod" {
		t.Errorf("strategic patch: %v", cs)
	}
	if r := mustOK(t, e.run("patch", "deploy/web", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:v2"}]}}}}`)); r.out != "deployment.apps/web patched (no change)\n" {
		t.Errorf("a patch that changes nothing: %q", r.out)
	}
	// YAML is read too; a patch file.
	mustOK(t, e.run("patch", "deploy", "web", "-p", "spec: {replicas: 5}"))
	pf := writeFile(t, dir, "p.yaml", "spec:\n  template:\n    spec:\n      containers:\n      - name: side\n        $patch: delete\n")
	mustOK(t, e.run("patch", "deploy", "web", "--patch-file", pf))
	if d := dep(); d.Spec.GetReplicas() != 5 || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("YAML patch and $patch: delete: replicas %d containers %v", d.Spec.GetReplicas(), d.Spec.Template.Spec.Containers)
	}
	// A merge patch replaces lists whole; a JSON patch is operations.
	mustOK(t, e.run("patch", "deploy", "web", "--type", "merge", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"only","image":"only:v1"}]}}},"metadata":{"labels":{"x":"1"}}}`))
	if d := dep(); len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].Name != "only" || d.Metadata.Labels["x"] != "1" {
		t.Errorf("merge patch: %v", d)
	}
	mustOK(t, e.run("patch", "deploy", "web", "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":1},{"op":"remove","path":"/metadata/labels/x"}]`))
	if d := dep(); d.Spec.GetReplicas() != 1 || d.Metadata.Labels["x"] != "" {
		t.Errorf("json patch: replicas %d labels %v", d.Spec.GetReplicas(), d.Metadata.Labels)
	}
	// Dry runs store nothing; the server's answer is printed.
	r := mustOK(t, e.run("patch", "deploy", "web", "-p", `{"spec":{"replicas":9}}`, "--dry-run=server", "-o", "jsonpath={.spec.replicas}"))
	if r.out != "9" {
		t.Errorf("--dry-run=server -o jsonpath: %q", r.out)
	}
	if r := mustOK(t, e.run("patch", "deploy", "web", "-p", `{"spec":{"replicas":8}}`, "--dry-run=client")); r.out != "deployment.apps/web patched (dry run)\n" {
		t.Errorf("--dry-run=client: %q", r.out)
	}
	if dep().Spec.GetReplicas() != 1 {
		t.Errorf("a dry run stored the patch: replicas %d", dep().Spec.GetReplicas())
	}
	// The status subresource.
	mustOK(t, e.run("patch", "deploy", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"observedGeneration":42}}`))
	if d := dep(); d.Status.GetObservedGeneration() != 42 {
		t.Errorf("status patch: %v", d.Status)
	}
	// The resize subresource: a pod's container cpu and memory, nothing else.
	mustCreate(t, e.c, &v1.Pod{Metadata: &v1.ObjectMeta{Name: "sized", Namespace: e.ns}, Spec: &v1.PodSpec{Containers: []*v1.Container{{
		Name: "c", Image: "busybox", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "100m"}, Limits: map[string]string{"cpu": "200m"}}}}}})
	if r := mustOK(t, e.run("patch", "pod", "sized", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"400m"}}}]}}`)); r.out != "pod/sized patched\n" {
		t.Errorf("resize: %q", r.out)
	}
	if l := get[*v1.Pod](t, e.c, e.ns, "sized").Spec.Containers[0].Resources.Limits; l["cpu"] != "400m" {
		t.Errorf("after the resize: limits %v", l)
	}
	mustFail(t, e.run("patch", "pod", "sized", "--subresource=resize", "-p", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`),
		"spec: Forbidden: only cpu and memory resources are mutable")
	mustFail(t, e.run("patch", "pod", "sized", "-p", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1"}}}]}}`), "pod updates may not change fields")
	mustFail(t, e.run("patch", "pod", "sized", "--subresource=resize", "--dry-run=client", "-p", `{}`), "use --dry-run=server")
	// Bad patches name what is wrong and change nothing.
	before := dep()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"patch", "deploy", "web", "-p", `{"spec":{"replicas":"many"}}`}, `spec.replicas`},
		{[]string{"patch", "deploy", "web", "-p", `{"spec":{"replicas":-1}}`}, `spec.replicas`},
		{[]string{"patch", "deploy", "web", "-p", `{"spec":{"replicaz":1}}`}, `spec.replicaz: unknown field`},
		{[]string{"patch", "deploy", "web", "-p", `{"metadata":{"name":"other"}}`}, `may not change the name`},
		{[]string{"patch", "deploy", "web", "-p", `{bad`}, `unable to parse`},
		{[]string{"patch", "deploy", "web", "--type=json", "-p", `{"op":"add"}`}, `not a JSON patch`},
		{[]string{"patch", "deploy", "web", "--type=json", "-p", `[{"op":"remove","path":"/spec/nope"}]`}, `json patch does not apply`},
		{[]string{"patch", "deploy", "web", "--type=yaml", "-p", `{}`}, `--type "yaml": want strategic, merge or json`},
		{[]string{"patch", "deploy", "web"}, "must specify --patch or --patch-file"},
		{[]string{"patch", "deploy", "web", "--patch-file", dir + "/none.yaml"}, "--patch-file: open"},
		{[]string{"patch", "deploy", "web", "-p", "{}", "--subresource=scale"}, `--subresource "scale"`},
		{[]string{"patch", "deploy", "nope", "-p", "{}"}, `deployments.apps "nope" not found`},
		{[]string{"patch", "deploy", "web", "-p", `{"spec":{"replicas":"x"}}`, "--dry-run=client"}, `spec.replicas`},
	} {
		mustFail(t, e.run(tc.args...), tc.want)
	}
	if after := dep(); after.Metadata.ResourceVersion != before.Metadata.ResourceVersion {
		t.Errorf("a refused patch changed the deployment: %v", after)
	}
}
