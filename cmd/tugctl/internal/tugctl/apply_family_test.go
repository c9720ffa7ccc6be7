package tugctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
  annotations: {team: blue}
spec:
  minReadySeconds: 5
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: app:v1
        env:
        - {name: MODE, value: prod}
        - {name: DEBUG, value: "1"}
      - name: side
        image: side:v1
`

func testDryRun(t *testing.T, e *env) {
	dir := t.TempDir()
	f := writeFile(t, dir, "web.yaml", webManifest)
	gone := func(kind, name string) {
		t.Helper()
		k, _ := kinds.Lookup(kind)
		if _, err := client.ForKind(e.c, k).Get(ctxT(t), e.ns, name); !apierrors.IsNotFound(err) {
			t.Errorf("a dry run stored %s %s (%v)", kind, name, err)
		}
	}
	// create -f: the server's answer has its defaults; nothing is stored.
	r := mustOK(t, e.run("create", "-f", f, "--dry-run=server", "-o", "jsonpath={.spec.strategy.type} {.spec.replicas}"))
	if r.out != "RollingUpdate 1" {
		t.Errorf("create --dry-run=server -o jsonpath: %q", r.out)
	}
	if r := mustOK(t, e.run("create", "-f", f, "--dry-run=server")); r.out != "deployment.apps/web created (server dry run)\n" {
		t.Errorf("create --dry-run=server: %q", r.out)
	}
	if r := mustOK(t, e.run("create", "-f", f, "--dry-run=client")); r.out != "deployment.apps/web created (dry run)\n" {
		t.Errorf("create --dry-run=client: %q", r.out)
	}
	if r := mustOK(t, e.run("apply", "-f", f, "--dry-run=server")); r.out != "deployment.apps/web created (server dry run)\n" {
		t.Errorf("apply --dry-run=server: %q", r.out)
	}
	mustOK(t, e.run("create", "deployment", "gen", "--image=x", "--dry-run=server"))
	gone("Deployment", "web")
	gone("Deployment", "gen")
	// The server's checks run: a dry run of what admission or validation
	// refuses fails, naming the field, where the client's decoding cannot
	// tell (no image).
	noImage := writeFile(t, dir, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers: [{name: c}]\n")
	mustFail(t, e.run("create", "-f", noImage, "--dry-run=server"), "spec.containers[0].image")
	mustFail(t, e.run("apply", "-f", noImage, "--dry-run=server"), "spec.containers[0].image")
	gone("Pod", "bad")

	// Existing objects: apply and delete dry runs change nothing.
	mustOK(t, e.run("apply", "-f", f))
	before := get[*v1.Deployment](t, e.c, e.ns, "web")
	writeFile(t, dir, "web.yaml", strings.Replace(webManifest, "app:v1", "app:v2", 1))
	r = mustOK(t, e.run("apply", "-f", f, "--dry-run=server", "-o", "jsonpath={.spec.template.spec.containers[0].image}"))
	if r.out != "app:v2" {
		t.Errorf("apply --dry-run=server -o jsonpath: %q", r.out)
	}
	if r := mustOK(t, e.run("apply", "-f", f, "--dry-run=client")); r.out != "deployment.apps/web configured (dry run)\n" {
		t.Errorf("apply --dry-run=client: %q", r.out)
	}
	if r := mustOK(t, e.run("delete", "deploy", "web", "--dry-run=server")); r.out != "deployment.apps \"web\" deleted (server dry run)\n" {
		t.Errorf("delete --dry-run=server: %q", r.out)
	}
	if r := mustOK(t, e.run("delete", "-f", f, "--dry-run=client")); r.out != "deployment.apps \"web\" deleted (dry run)\n" {
		t.Errorf("delete --dry-run=client: %q", r.out)
	}
	mustFail(t, e.run("delete", "deploy", "nope", "--dry-run=client"), `deployments.apps "nope" not found`)
	if after := get[*v1.Deployment](t, e.c, e.ns, "web"); after.Metadata.ResourceVersion != before.Metadata.ResourceVersion || after.Metadata.DeletionTimestamp != nil {
		t.Errorf("a dry run changed the deployment: %v", after)
	}
}

// Apply is kubectl's three-way merge: a field removed from the manifest is
// removed from the object, fields others set are kept.
func testApplyThreeWay(t *testing.T, e *env) {
	dir := t.TempDir()
	f := writeFile(t, dir, "web.yaml", webManifest)
	mustOK(t, e.run("apply", "-f", f))
	dep := func() *v1.Deployment { return get[*v1.Deployment](t, e.c, e.ns, "web") }
	// Others change it: a scale (replicas is not in the manifest), a
	// controller's annotation, a label added by hand, a container added.
	mustOK(t, e.run("scale", "deploy/web", "--replicas=4"))
	mustOK(t, e.run("annotate", "deploy/web", "deployment.kubernetes.io/revision=3"))
	mustOK(t, e.run("label", "deploy/web", "owner=ops"))

	// The manifest drops minReadySeconds, the DEBUG variable, the side
	// container and the team annotation, and changes the image.
	next := strings.NewReplacer("  minReadySeconds: 5\n", "", "        - {name: DEBUG, value: \"1\"}\n", "",
		"      - name: side\n        image: side:v1\n", "", "  annotations: {team: blue}\n", "", "app:v1", "app:v2").Replace(webManifest)
	writeFile(t, dir, "web.yaml", next)
	if r := mustOK(t, e.run("apply", "-f", f)); r.out != "deployment.apps/web configured\n" {
		t.Errorf("apply: %q", r.out)
	}
	d := dep()
	cs := d.Spec.Template.Spec.Containers
	if d.Spec.MinReadySeconds != 0 || len(cs) != 1 || cs[0].Image != "app:v2" || len(cs[0].Env) != 1 || cs[0].Env[0].Name != "MODE" {
		t.Errorf("fields removed from the manifest are still there: minReadySeconds %d containers %v", d.Spec.MinReadySeconds, cs)
	}
	if _, ok := d.Metadata.Annotations["team"]; ok {
		t.Errorf("an annotation removed from the manifest is still there: %v", d.Metadata.Annotations)
	}
	if d.Spec.GetReplicas() != 4 || d.Metadata.Annotations["deployment.kubernetes.io/revision"] != "3" || d.Metadata.Labels["owner"] != "ops" {
		t.Errorf("what others set was lost: replicas %d annotations %v labels %v", d.Spec.GetReplicas(), d.Metadata.Annotations, d.Metadata.Labels)
	}
	if r := mustOK(t, e.run("apply", "-f", f)); r.out != "deployment.apps/web unchanged\n" {
		t.Errorf("re-apply: %q", r.out)
	}
	// An object made without apply: the first apply keeps what the
	// manifest does not name, and records the manifest.
	mustCreate(t, e.c, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "conf", Namespace: e.ns, Labels: map[string]string{"made": "by-hand"}}, Data: map[string]string{"a": "1", "b": "2"}})
	cm := writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: \"10\", c: \"3\"}\n")
	mustOK(t, e.run("apply", "-f", cm))
	c := get[*v1.ConfigMap](t, e.c, e.ns, "conf")
	if c.Data["a"] != "10" || c.Data["b"] != "2" || c.Data["c"] != "3" || c.Metadata.Labels["made"] != "by-hand" || c.Metadata.Annotations[v1.LastAppliedAnnotation] == "" {
		t.Errorf("first apply over a created object: %v", c)
	}
	writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: \"10\"}\n")
	mustOK(t, e.run("apply", "-f", cm))
	if c := get[*v1.ConfigMap](t, e.c, e.ns, "conf"); c.Data["c"] != "" || c.Data["b"] != "2" {
		t.Errorf("second apply: c (applied, then removed) should go, b (never applied) stay: %v", c.Data)
	}
	// --overwrite=false: a field changed live since the last apply and by
	// the manifest is a conflict, and nothing changes.
	mustOK(t, e.run("patch", "cm", "conf", "-p", `{"data":{"a":"live"}}`))
	writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: \"11\"}\n")
	mustFail(t, e.run("apply", "-f", cm, "--overwrite=false"), "conflict")
	if c := get[*v1.ConfigMap](t, e.c, e.ns, "conf"); c.Data["a"] != "live" {
		t.Errorf("a refused apply changed the object: %v", c.Data)
	}
}

func testApplyPrune(t *testing.T, e *env) {
	dir := t.TempDir()
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", labels: {app: p}}\ndata: {k: v}\n"
	}
	writeFile(t, dir, "a.yaml", cm("a"))
	writeFile(t, dir, "b.yaml", cm("b"))
	mustOK(t, e.run("apply", "-f", dir))
	// Made without apply, and of another app: neither is pruned.
	mustOK(t, e.runIn(cm("by-hand"), "create", "-f", "-"))
	mustOK(t, e.runIn(strings.Replace(cm("other"), "app: p", "app: q", 1), "apply", "-f", "-"))
	os.Remove(filepath.Join(dir, "b.yaml"))
	mustFail(t, e.run("apply", "-f", dir, "--prune"), "--prune: needs -l SELECTOR")
	if r := mustOK(t, e.run("apply", "-f", dir, "--prune", "-l", "app=p", "--dry-run=server")); r.out != "configmap/a unchanged (server dry run)\nconfigmap/b pruned (server dry run)\n" {
		t.Errorf("apply --prune --dry-run=server: %q", r.out)
	}
	get[*v1.ConfigMap](t, e.c, e.ns, "b")
	if r := mustOK(t, e.run("apply", "-f", dir, "--prune", "-l", "app=p")); r.out != "configmap/a unchanged\nconfigmap/b pruned\n" {
		t.Errorf("apply --prune: %q", r.out)
	}
	if _, err := client.For[*v1.ConfigMap](e.c).Get(ctxT(t), e.ns, "b"); !apierrors.IsNotFound(err) {
		t.Errorf("b was not pruned: %v", err)
	}
	for _, n := range []string{"a", "by-hand", "other"} {
		get[*v1.ConfigMap](t, e.c, e.ns, n)
	}
}

func testDiff(t *testing.T, e *env) {
	dir := t.TempDir()
	f := writeFile(t, dir, "web.yaml", webManifest)
	// Nothing there yet: all added, exit 1.
	r := e.run("diff", "-f", f)
	if r.code != 1 || !strings.HasPrefix(r.out, "diff -u -N LIVE/apps.v1.Deployment.diff.web MERGED/apps.v1.Deployment.diff.web\n--- LIVE/apps.v1.Deployment.diff.web\n+++ MERGED/apps.v1.Deployment.diff.web\n@@ -0,0 +1,") ||
		!strings.Contains(r.out, "\n+  name: web\n") {
		t.Errorf("diff of a new object: %v", r)
	}
	if _, err := client.For[*v1.Deployment](e.c).Get(ctxT(t), e.ns, "web"); !apierrors.IsNotFound(err) {
		t.Errorf("diff created the object: %v", err)
	}
	mustOK(t, e.run("apply", "-f", f))
	if r := e.run("diff", "-f", f); r.code != 0 || r.out != "" {
		t.Errorf("diff of what is applied: %v", r)
	}
	before := get[*v1.Deployment](t, e.c, e.ns, "web")
	writeFile(t, dir, "web.yaml", strings.Replace(webManifest, "  minReadySeconds: 5\n", "", 1))
	r = e.run("diff", "-f", f)
	if r.code != 1 || !strings.Contains(r.out, "\n-  minReadySeconds: 5\n") || !strings.Contains(r.out, "\n-  generation: 1\n+  generation: 2\n") || strings.Contains(r.out, "+  minReadySeconds") {
		t.Errorf("diff of a removed field: %v", r)
	}
	if after := get[*v1.Deployment](t, e.c, e.ns, "web"); after.Metadata.ResourceVersion != before.Metadata.ResourceVersion {
		t.Errorf("diff changed the object")
	}
	// Secret values are masked.
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {same: x, changed: old}\n"
	mustOK(t, e.runIn(secret, "apply", "-f", "-"))
	r = e.runIn(strings.Replace(secret, "old", "new", 1), "diff", "-f", "-")
	if r.code != 1 || !strings.Contains(r.out, "-  changed: '*** (before)'\n+  changed: '*** (after)'\n") || !strings.Contains(r.out, " same: '***'") || strings.Contains(r.out, "bmV3") || strings.Contains(r.out, "b2xk") {
		t.Errorf("diff of a secret: %v", r)
	}
	// Errors exit 2.
	if r := e.runIn("apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers: [{name: c}]\n", "diff", "-f", "-"); r.code != 2 || !strings.Contains(r.err, "spec.containers[0].image") {
		t.Errorf("diff of an invalid object: %v", r)
	}
	if r := e.run("diff", "-f", filepath.Join(dir, "none.yaml")); r.code != 2 {
		t.Errorf("diff of a missing file: %v", r)
	}
}

func testKustomize(t *testing.T, e *env) {
	base := t.TempDir()
	writeFile(t, base, "web.yaml", webManifest)
	writeFile(t, base, "kustomization.yaml", `resources: [web.yaml]
namePrefix: dev-
labels:
- {pairs: {env: dev}, includeSelectors: true}
images:
- {name: app, newTag: v7}
configMapGenerator:
- name: settings
  literals: [mode=fast]
`)
	r := mustOK(t, e.run("kustomize", base))
	for _, want := range []string{"name: dev-web", "env: dev", "image: app:v7", "name: dev-settings-", "mode: fast"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("kustomize lacks %q:\n%s", want, r.out)
		}
	}
	if r := mustOK(t, e.run("apply", "-k", base)); !strings.Contains(r.out, "deployment.apps/dev-web created\n") || !strings.Contains(r.out, "configmap/dev-settings-") {
		t.Errorf("apply -k: %q", r.out)
	}
	d := get[*v1.Deployment](t, e.c, e.ns, "dev-web")
	if d.Metadata.Labels["env"] != "dev" || d.Spec.Template.Spec.Containers[0].Image != "app:v7" {
		t.Errorf("apply -k stored %v", d)
	}
	if r := e.run("diff", "-k", base); r.code != 0 {
		t.Errorf("diff -k after apply -k: %v", r)
	}
	mustFail(t, e.run("apply", "-k", base, "-f", filepath.Join(base, "web.yaml")), "-f and -k do not go together")
	bad := t.TempDir()
	writeFile(t, bad, "kustomization.yaml", "resources: [missing.yaml]\n")
	mustFail(t, e.run("apply", "-k", bad), "kustomize "+bad)
	mustFail(t, e.run("kustomize", filepath.Join(bad, "kustomization.yaml")), "not a directory")
	mustOK(t, e.run("delete", "-k", base, "--wait=false"))
	if _, err := client.For[*v1.Deployment](e.c).Get(ctxT(t), e.ns, "dev-web"); !apierrors.IsNotFound(err) {
		t.Errorf("delete -k left dev-web: %v", err)
	}
}

func testCreateJob(t *testing.T, e *env) {
	if r := mustOK(t, e.run("create", "job", "once", "--image=busybox", "--", "sh", "-c", "echo hi")); r.out != "job.batch/once created\n" {
		t.Errorf("create job: %q", r.out)
	}
	j := get[*v1.Job](t, e.c, e.ns, "once")
	c := j.Spec.Template.Spec.Containers[0]
	if c.Name != "once" || c.Image != "busybox" || strings.Join(c.Command, " ") != "sh -c echo hi" || j.Spec.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("job: %v", j.Spec)
	}
	cj := mustCreate(t, e.c, &v1.CronJob{
		Metadata: &v1.ObjectMeta{Name: "backup", Namespace: e.ns},
		Spec: &v1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: &v1.JobTemplateSpec{
			Metadata: &v1.ObjectMeta{Labels: map[string]string{"task": "backup"}, Annotations: map[string]string{"note": "nightly"}},
			Spec: &v1.JobSpec{BackoffLimit: proto.Int32(2), Template: &v1.PodTemplateSpec{Spec: &v1.PodSpec{
				RestartPolicy: "OnFailure", Containers: []*v1.Container{{Name: "dump", Image: "dump:v1"}},
			}}},
		}},
	})
	mustOK(t, e.run("create", "job", "backup-now", "--from=cronjob/backup"))
	j = get[*v1.Job](t, e.c, e.ns, "backup-now")
	m := j.Metadata
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Uid != cj.Metadata.Uid || !m.OwnerReferences[0].Controller || m.OwnerReferences[0].Kind != "CronJob" ||
		m.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || m.Annotations["note"] != "nightly" || m.Labels["task"] != "backup" ||
		j.Spec.GetBackoffLimit() != 2 || j.Spec.Template.Spec.Containers[0].Image != "dump:v1" {
		t.Errorf("job from the cronjob: %v", j)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "job", "x"}, "either --image or --from must be specified"},
		{[]string{"create", "job", "x", "--image=a", "--from=cronjob/backup"}, "either --image or --from must be specified"},
		{[]string{"create", "job", "x", "--from=deploy/web"}, `--from "deploy/web": want cronjob/NAME`},
		{[]string{"create", "job", "x", "--from=cronjob/nope"}, `cronjobs.batch "nope" not found`},
		{[]string{"create", "job", "x", "--from=cronjob/backup", "--", "sh"}, "only goes with --image"},
		{[]string{"create", "job", "Bad_Name", "--image=a"}, "metadata.name"},
	} {
		mustFail(t, e.run(tc.args...), tc.want)
	}
	if _, err := client.For[*v1.Job](e.c).Get(ctxT(t), e.ns, "x"); !apierrors.IsNotFound(err) {
		t.Errorf("a failed create job stored x")
	}
}
