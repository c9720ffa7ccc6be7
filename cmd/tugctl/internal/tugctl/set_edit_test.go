package tugctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func testSet(t *testing.T, e *env) {
	mustCreate(t, e.c, webDeployment(e.ns))
	mustCreate(t, e.c, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "settings", Namespace: e.ns}, Data: map[string]string{"log-level": "debug", "color": "blue"}})
	dep := func() *v1.Deployment { return get[*v1.Deployment](t, e.c, e.ns, "web") }
	container := func(name string) *v1.Container {
		for _, c := range dep().Spec.Template.Spec.Containers {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no container %s", name)
		return nil
	}
	// set image: one container, then every container; unchanged prints nothing.
	if r := mustOK(t, e.run("set", "image", "deploy/web", "app=app:v2")); r.out != "deployment.apps/web image updated\n" {
		t.Errorf("set image: %q", r.out)
	}
	if container("app").Image != "app:v2" || container("side").Image != "side:v1" {
		t.Errorf("set image app=: %v", dep().Spec.Template.Spec.Containers)
	}
	if r := mustOK(t, e.run("set", "image", "deploy/web", "app=app:v2")); r.out != "" {
		t.Errorf("set image with no change printed %q", r.out)
	}
	mustOK(t, e.run("set", "image", "deployment", "web", "*=all:v3"))
	if container("app").Image != "all:v3" || container("side").Image != "all:v3" {
		t.Errorf("set image '*=': %v", dep().Spec.Template.Spec.Containers)
	}
	// A pod too.
	mustCreate(t, e.c, &v1.Pod{Metadata: &v1.ObjectMeta{Name: "solo", Namespace: e.ns}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "c:v1"}}}})
	mustOK(t, e.run("set", "image", "pod/solo", "c=c:v2"))
	if get[*v1.Pod](t, e.c, e.ns, "solo").Spec.Containers[0].Image != "c:v2" {
		t.Errorf("set image on a pod")
	}

	// set env: add, change, remove; --from a configmap; --list.
	if r := mustOK(t, e.run("set", "env", "deploy/web", "-c", "app", "LEVEL=3", "MODE=dev")); r.out != "deployment.apps/web env updated\n" {
		t.Errorf("set env: %q", r.out)
	}
	env := func(c string) map[string]string {
		out := map[string]string{}
		for _, v := range container(c).Env {
			out[v.Name] = v.Value
			if r := v.ValueFrom.GetConfigMapKeyRef(); r != nil {
				out[v.Name] = "from " + r.Name + "/" + r.Key
			}
		}
		return out
	}
	if a := env("app"); a["LEVEL"] != "3" || a["MODE"] != "dev" || len(env("side")) != 0 {
		t.Errorf("set env -c app: app %v side %v", a, env("side"))
	}
	mustOK(t, e.run("set", "env", "deploy/web", "MODE-", "--from=configmap/settings", "--prefix=APP_", "--keys=log-level"))
	if a, s := env("app"), env("side"); a["MODE"] != "" || a["APP_LOG_LEVEL"] != "from settings/log-level" || s["APP_LOG_LEVEL"] == "" || a["APP_COLOR"] != "" {
		t.Errorf("set env MODE- --from: app %v side %v", a, s)
	}
	mustOK(t, e.run("set", "env", "deploy/web", "-c", "app", "LEVEL=9", "--overwrite=false"))
	if env("app")["LEVEL"] != "3" {
		t.Errorf("--overwrite=false changed LEVEL: %v", env("app"))
	}
	if r := mustOK(t, e.run("set", "env", "deploy/web", "-c", "app", "--list")); r.out != "# Deployment web, container app\nLEVEL=3\n# APP_LOG_LEVEL from configmap settings, key log-level\n" {
		t.Errorf("set env --list: %q", r.out)
	}

	// set resources.
	if r := mustOK(t, e.run("set", "resources", "deploy/web", "-c", "side", "--limits=cpu=200m,memory=512Mi", "--requests=cpu=100m")); r.out != "deployment.apps/web resource requirements updated\n" {
		t.Errorf("set resources: %q", r.out)
	}
	res := container("side").Resources
	if res.Limits["cpu"] != "200m" || res.Limits["memory"] != "512Mi" || res.Requests["cpu"] != "100m" || container("app").Resources != nil {
		t.Errorf("set resources: side %v app %v", res, container("app").Resources)
	}
	mustOK(t, e.run("set", "resources", "deploy/web", "-c", "side", "--limits=memory=0"))
	if res := container("side").Resources; res.Limits["memory"] != "" || res.Limits["cpu"] != "200m" {
		t.Errorf("set resources memory=0: %v", res)
	}

	// Dry runs store nothing.
	before := dep()
	if r := mustOK(t, e.run("set", "image", "deploy/web", "app=dry:v1", "--dry-run=server")); r.out != "deployment.apps/web image updated (server dry run)\n" {
		t.Errorf("set image --dry-run=server: %q", r.out)
	}
	mustOK(t, e.run("set", "env", "deploy/web", "DRY=1", "--dry-run=client"))
	// Bad input names what is wrong and changes nothing.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "image", "deploy/web", "nope=x:1"}, `unable to find container named "nope"`},
		{[]string{"set", "image", "deploy/web"}, "at least one image update is required"},
		{[]string{"set", "image", "deploy/web", "app="}, `"app=": want CONTAINER=IMAGE`},
		{[]string{"set", "image", "configmap/settings", "a=b"}, "has no pod template"},
		{[]string{"set", "env", "deploy/web", "bad name=1"}, `"bad name" is not a valid key name`},
		{[]string{"set", "env", "deploy/web", "--from=deploy/web"}, `--from "deploy/web": want configmap/NAME or secret/NAME`},
		{[]string{"set", "env", "deploy/web", "--from=configmap/none"}, `configmaps "none" not found`},
		{[]string{"set", "env", "deploy/web", "--from=configmap/settings", "--keys=nokey"}, `has no key "nokey"`},
		{[]string{"set", "env", "deploy/web", "-c", "nope", "A=1"}, `unable to find container named "nope"`},
		{[]string{"set", "resources", "deploy/web", "--limits=cpu=abc"}, "--limits: cpu=abc"},
		{[]string{"set", "resources", "deploy/web", "--limits=cpu"}, `--limits "cpu": want RESOURCE=QUANTITY`},
		{[]string{"set", "resources", "deploy/web"}, "you must specify an update to requests or limits"},
		{[]string{"set", "resources", "deploy/web", "--requests=cpu=2", "--limits=cpu=1"}, "requests"},
		{[]string{"set", "image", "deploy/nope", "a=b"}, `deployments.apps "nope" not found`},
	} {
		mustFail(t, e.run(tc.args...), tc.want)
	}
	if after := dep(); after.Metadata.ResourceVersion != before.Metadata.ResourceVersion {
		t.Errorf("a dry run or a refused set changed the deployment: %v", after.Spec.Template.Spec.Containers)
	}
}

// editorScript writes a shell script that plays the user: on its Nth run
// it runs step N (a sed expression applied to the file, or "" to save it
// unchanged) and copies the file as it found it to seenN.
func editorScript(t *testing.T, dir string, steps ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/sh\nset -e\nd=" + dir + "\nn=$(cat $d/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > $d/count\ncp \"$1\" $d/seen$n\ncase $n in\n")
	for i, s := range steps {
		if s != "" {
			b.WriteString("  " + string(rune('1'+i)) + ") sed -i '" + s + "' \"$1\";;\n")
		}
	}
	b.WriteString("esac\n")
	p := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(p, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func readSeen(t *testing.T, dir string, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "seen"+string(rune('0'+n))))
	if err != nil {
		t.Fatalf("the editor did not run a %dth time: %v", n, err)
	}
	return string(b)
}

func testEdit(t *testing.T, e *env) {
	mustCreate(t, e.c, webDeployment(e.ns))
	dep := func() *v1.Deployment { return get[*v1.Deployment](t, e.c, e.ns, "web") }
	edit := func(steps ...string) (result, string) {
		dir := t.TempDir()
		e.vars = map[string]string{"KUBE_EDITOR": editorScript(t, dir, steps...), "EDITOR": "false"}
		return e.run("edit", "deploy/web"), dir
	}
	// A change saved: only it is sent.
	r, dir := edit(`s/replicas: 2/replicas: 3/`)
	if r.code != 0 || r.out != "deployment.apps/web edited\n" {
		t.Errorf("edit: %v", r)
	}
	if first := readSeen(t, dir, 1); !strings.HasPrefix(first, "# Please edit the object below.") || !strings.Contains(first, "\nkind: Deployment\n") || !strings.Contains(first, "replicas: 2") {
		t.Errorf("the file opened:\n%s", first)
	}
	if dep().Spec.GetReplicas() != 3 {
		t.Errorf("edit did not store replicas 3: %d", dep().Spec.GetReplicas())
	}
	// Saved unchanged: nothing sent.
	rv := dep().Metadata.ResourceVersion
	if r, _ := edit(""); r.code != 0 || r.err != "Edit cancelled, no changes made.\n" || dep().Metadata.ResourceVersion != rv {
		t.Errorf("edit without a change: %v", r)
	}
	// A failing save reopens the file with the error on top and the
	// user's change kept; the user fixes it.
	r, dir = edit(`s/replicas: 3/replicas: -1/; s/image: side:v1/image: side:v2/`, `s/replicas: -1/replicas: 4/`)
	second := readSeen(t, dir, 2)
	if !strings.Contains(second, "# deployments.apps \"web\" was not valid:\n# * spec.replicas: ") || !strings.Contains(second, "\n  replicas: -1\n") || !strings.Contains(second, "image: side:v2") {
		t.Errorf("the reopened file lacks the error or the user's change:\n%s", second)
	}
	if r.code != 0 || r.out != "deployment.apps/web edited\n" {
		t.Errorf("edit fixed on the second save: %v", r)
	}
	if d := dep(); d.Spec.GetReplicas() != 4 || d.Spec.Template.Spec.Containers[1].Image != "side:v2" {
		t.Errorf("after the fixed edit: replicas %d containers %v", d.Spec.GetReplicas(), d.Spec.Template.Spec.Containers)
	}
	// The user gives up (saves the reopened file unchanged): nothing is
	// stored, the file with the change is kept and named.
	rv = dep().Metadata.ResourceVersion
	r, dir = edit(`s/replicas: 4/replicas: -2/`, "")
	mustFail(t, r, `error: deployments.apps "web" is invalid`, "A copy of your changes has been stored to", "Edit cancelled, no valid changes were saved.")
	kept := r.err[strings.Index(r.err, "stored to \"")+len("stored to \""):]
	kept = kept[:strings.Index(kept, "\"")]
	if b, err := os.ReadFile(kept); err != nil || !strings.Contains(string(b), "replicas: -2") {
		t.Errorf("the kept copy %s: %v\n%s", kept, err, b)
	} else {
		os.Remove(kept)
	}
	if dep().Metadata.ResourceVersion != rv {
		t.Errorf("a cancelled edit changed the deployment")
	}
	// A syntax error reopens too.
	r, dir = edit(`s/^kind: Deployment/kind: [Deployment/`, `s/^kind: \[Deployment/kind: Deployment/; s/replicas: 4/replicas: 5/`)
	if second := readSeen(t, dir, 2); !strings.Contains(second, "# The edited file had a syntax error:") || r.code != 0 || dep().Spec.GetReplicas() != 5 {
		t.Errorf("edit with a syntax error: %v\n%s", r, second)
	}
	// Changing the name is refused.
	r, _ = edit(`s/^  name: web/  name: other/`, "")
	mustFail(t, r, "at least one of apiVersion, kind and name was changed")
	// An empty file cancels.
	if r, _ := edit(`/^[^#]/d`); r.code != 0 || r.err != "Edit cancelled, saved file was empty.\n" {
		t.Errorf("edit to an empty file: %v", r)
	}
	e.vars = map[string]string{"KUBE_EDITOR": "/no/such/editor"}
	mustFail(t, e.run("edit", "deploy/web"), "the editor failed")
	mustFail(t, e.run("edit", "deploy/web", "-o", "toml"), `--output "toml"`)
	e.vars = nil
}
