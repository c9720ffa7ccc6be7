package tugctl

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestWait(t *testing.T) {
	e := newEnv(t)
	pods := client.For[*v1.Pod](e.c)
	for _, n := range []string{"a", "b"} {
		mustCreate(t, e.c, &v1.Pod{Metadata: &v1.ObjectMeta{Name: n, Namespace: "default", Labels: map[string]string{"app": "w"}},
			Spec: &v1.PodSpec{NodeName: "n1", TerminationGracePeriodSeconds: proto.Int64(0), Containers: []*v1.Container{{Name: "c", Image: "busybox"}}}})
	}
	setStatus := func(name, phase, ready string) {
		if _, err := pods.Mutate(ctxT(t), "default", name, true, func(p *v1.Pod) error {
			p.Status = &v1.PodStatus{Phase: phase, Conditions: []*v1.Condition{{Type: "Ready", Status: ready}}}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	setStatus("a", "Pending", "False")
	setStatus("b", "Pending", "False")

	// The condition becomes true while tugctl waits.
	bg := e.start("wait", "pod", "-l", "app=w", "--for=condition=ready", "--timeout=20s")
	setStatus("a", "Running", "True")
	setStatus("b", "Running", "True")
	if code := bg.wait(t, 25*time.Second); code != 0 || !strings.Contains(bg.out.String(), "pod/a condition met\n") || !strings.Contains(bg.out.String(), "pod/b condition met\n") {
		t.Errorf("wait -l --for=condition=ready: exit %d\n%s%s", code, bg.out.String(), bg.err.String())
	}
	if r := mustOK(t, e.run("wait", "pod/a", "--for=jsonpath={.status.phase}=Running")); r.out != "pod/a condition met\n" {
		t.Errorf("wait --for=jsonpath: %q", r.out)
	}
	mustOK(t, e.run("wait", "pod/a", "--for=jsonpath={.spec.nodeName}"))

	// A timeout names what each object still has. The timeouts are long
	// enough for a loaded machine to read both pods first (pod/a must be
	// seen met before they run out); what they wait for never comes.
	setStatus("b", "Running", "False")
	r := e.run("wait", "pods", "a", "b", "--for=condition=Ready", "--timeout=3s")
	mustFail(t, r, "timed out waiting for the condition on pods/b (condition Ready is False)")
	if strings.Contains(r.err, "pods/a") || !strings.Contains(r.out, "pod/a condition met") {
		t.Errorf("timeout: %v", r)
	}
	mustFail(t, e.run("wait", "pod/a", "--for=jsonpath={.status.phase}=Failed", "--timeout=3s"), `pods/a ({.status.phase} is "Running")`)

	// --for=delete: the delete happens while tugctl waits.
	bg = e.start("wait", "pod/b", "--for=delete", "--timeout=20s")
	if _, err := pods.Delete(ctxT(t), "default", "b", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := bg.wait(t, 25*time.Second); code != 0 || bg.out.String() != "pod/b deleted\n" {
		t.Errorf("wait --for=delete: %d %q %q", code, bg.out.String(), bg.err.String())
	}
	mustFail(t, e.run("wait", "pod/a", "--for=delete", "--timeout=6s"), "pods/a (still exists)")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"wait", "pod/a"}, "--for: required"},
		{[]string{"wait", "pod/a", "--for=ready"}, `--for "ready": want condition=TYPE`},
		{[]string{"wait", "pod/a", "--for=jsonpath={{x}}=1"}, "unexpected path string"},
		{[]string{"wait", "pod/nope", "--for=condition=Ready"}, `pods "nope" not found`},
		{[]string{"wait", "pod", "--for=condition=Ready"}, "name the objects"},
		{[]string{"wait", "pod", "-l", "app=none", "--for=condition=Ready"}, "no matching resources found"},
	} {
		mustFail(t, e.run(tc.args...), tc.want)
	}
}
