package tugctl

import (
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestGetOutputFormats: -o jsonpath, custom-columns, go-template,
// --sort-by and -L on objects read from a real apiserver, and the kind
// prefix on the name column with several kinds.
func TestGetOutputFormats(t *testing.T) {
	e := newEnv(t)
	for _, p := range []struct{ name, node, tier string }{{"web-10", "n2", "front"}, {"web-2", "n1", "back"}, {"web-1", "n3", ""}} {
		labels := map[string]string{"app": "web"}
		if p.tier != "" {
			labels["tier"] = p.tier
		}
		mustCreate(t, e.c, &v1.Pod{Metadata: &v1.ObjectMeta{Name: p.name, Namespace: "default", Labels: labels},
			Spec: &v1.PodSpec{NodeName: p.node, Containers: []*v1.Container{{Name: "app", Image: "nginx:1.25"}}}})
	}
	mustCreate(t, e.c, &v1.Event{Metadata: &v1.ObjectMeta{Name: "web-1.abc", Namespace: "default"}, Reason: "Scheduled", Type: "Normal",
		InvolvedObject: &v1.ObjectReference{Kind: "Pod", Name: "web-1", Namespace: "default"}, Message: "placed"})

	if r := mustOK(t, e.run("get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}`)); r.out != "web-1=n3\nweb-10=n2\nweb-2=n1\n" {
		t.Errorf("jsonpath over the list: %q", r.out)
	}
	if r := mustOK(t, e.run("get", "pod", "web-2", "-o", "jsonpath={.spec.containers[0].image}")); r.out != "nginx:1.25" {
		t.Errorf("jsonpath of one pod: %q", r.out)
	}
	if r := mustOK(t, e.run("get", "pods", "--sort-by=.spec.nodeName", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,TIER:.metadata.labels.tier")); r.out !=
		"NAME     NODE   TIER\nweb-2    n1     back\nweb-10   n2     front\nweb-1    n3     <none>\n" {
		t.Errorf("custom-columns --sort-by:\n%s", r.out)
	}
	if r := mustOK(t, e.run("get", "pods", "--sort-by={.metadata.name}", "-o", "name")); r.out != "pod/web-1\npod/web-10\npod/web-2\n" {
		t.Errorf("--sort-by name, byte order as kubectl's: %q", r.out)
	}
	if r := mustOK(t, e.run("get", "pods", "-o", "go-template={{range .items}}{{.metadata.name}} {{end}}")); r.out != "web-1 web-10 web-2 " {
		t.Errorf("go-template: %q", r.out)
	}
	r := mustOK(t, e.run("get", "pods", "-L", "tier,app", "--sort-by=.metadata.name"))
	if rows := fieldsOf(r.out); strings.Join(rows[0], " ") != "NAME READY STATUS RESTARTS AGE TIER APP" || rows[1][0] != "web-1" || rows[1][len(rows[1])-1] != "web" || rows[3][5] != "back" {
		t.Errorf("-L:\n%s", r.out)
	}
	// Several kinds: the kind goes on the NAME cell (events show theirs
	// only with -o wide), not on the first cell.
	r = mustOK(t, e.run("get", "ev,pods"))
	if strings.Contains(r.out, "event/") || !strings.Contains(r.out, "pod/web-1 ") {
		t.Errorf("get ev,pods:\n%s", r.out)
	}
	r = mustOK(t, e.run("get", "ev,pods", "-o", "wide"))
	if !strings.Contains(r.out, "event/web-1.abc") || strings.HasPrefix(strings.Split(r.out, "\n")[1], "event/") {
		t.Errorf("get ev,pods -o wide:\n%s", r.out)
	}
	// Bad templates and paths name themselves and print nothing.
	for arg, want := range map[string]string{
		"-o=jsonpath={.items[":   "error parsing jsonpath {.items[",
		"-o=custom-columns=NAME": "unexpected custom-columns spec: NAME",
		"--sort-by=.spec.nope":   `couldn't find any field with path "{.spec.nope}"`,
		"--sort-by={{x}}":        "--sort-by {{x}}: unexpected path string",
		"-o=go-template={{.x":    "error parsing template {{.x",
	} {
		r := e.run("get", "pods", arg)
		if r.code == 0 || r.out != "" || !strings.Contains(r.err, want) {
			t.Errorf("get pods %s: %v, want %q", arg, r, want)
		}
	}
}
