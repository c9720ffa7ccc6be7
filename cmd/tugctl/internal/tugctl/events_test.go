package tugctl

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

func testEvent(name, kind, obj, reason string, ago time.Duration) *v1.Event {
	return &v1.Event{
		Metadata:       &v1.ObjectMeta{Name: name, Namespace: "default"},
		InvolvedObject: &v1.ObjectReference{Kind: kind, Name: obj, Namespace: "default"},
		Reason:         reason, Message: reason + " of " + obj, Type: "Normal",
		LastTimestamp: timestamppb.New(time.Now().Add(-ago)),
	}
}

func TestGetEventsFor(t *testing.T) {
	e := newEnv(t)
	// Created out of order: the table is by last timestamp, oldest first.
	mustCreate(t, e.c, testEvent("e1", "Pod", "web", "Started", 10*time.Second))
	mustCreate(t, e.c, testEvent("e2", "Pod", "web", "Pulled", 30*time.Second))
	mustCreate(t, e.c, testEvent("e3", "Pod", "db", "Started", 20*time.Second))
	mustCreate(t, e.c, testEvent("e4", "Deployment", "web", "ScalingReplicaSet", 5*time.Second))

	r := mustOK(t, e.run("get", "events"))
	var reasons []string
	for _, f := range fieldsOf(r.out)[1:] {
		reasons = append(reasons, f[2]+"/"+f[3])
	}
	if got := strings.Join(reasons, " "); got != "Pulled/pod/web Started/pod/db Started/pod/web ScalingReplicaSet/deployment/web" {
		t.Errorf("events order: %s\n%s", got, r.out)
	}
	r = mustOK(t, e.run("get", "events", "--for", "pod/web"))
	if got := fieldsOf(r.out); len(got) != 3 || got[1][2] != "Pulled" || got[2][2] != "Started" || strings.Contains(r.out, "db") || strings.Contains(r.out, "deployment/") {
		t.Errorf("--for pod/web:\n%s", r.out)
	}
	r = mustOK(t, e.run("get", "ev", "--for", "deploy/web", "-o", "name"))
	if r.out != "event/e4\n" {
		t.Errorf("--for deploy/web printed %q", r.out)
	}
	// --for combines with --field-selector.
	r = mustOK(t, e.run("get", "events", "--for", "pod/web", "--field-selector", "reason=Started", "-o", "name"))
	if r.out != "event/e1\n" {
		t.Errorf("--for with --field-selector printed %q", r.out)
	}
	mustFail(t, e.run("get", "pods", "--for", "pod/web"), "--for: only with get events")
	mustFail(t, e.run("get", "events", "--for", "web"), `--for "web": want KIND/NAME`)
	mustFail(t, e.run("get", "events", "--for", "pdo/web"), `--for "pdo/web": the server doesn't have a resource type "pdo"`)

	// -w --for prints only new events about the object.
	b := e.start("get", "events", "-w", "--for", "pod/db")
	wait.Eventually(t, 10*time.Second, "the listed event", outputHas(b.out, "Started of db"))
	mustCreate(t, e.c, testEvent("e5", "Pod", "web", "Killing", 0))
	mustCreate(t, e.c, testEvent("e6", "Pod", "db", "Killing", 0))
	wait.Eventually(t, 10*time.Second, "the new event", outputHas(b.out, "Killing of db"))
	if strings.Contains(b.out.String(), "of web") {
		t.Errorf("watch --for pod/db printed another object's event:\n%s", b.out.String())
	}
}
