package tugctl

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/deploy"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/revision"
	"google.golang.org/protobuf/proto"
)

func TestScale(t *testing.T) {
	e := newEnv(t)
	d := mustCreate(t, e.c, testDeployment("web", 3, "web:1"))
	rs := mustCreate(t, e.c, testReplicaSet(d, "web-abc", "abc", 1, 3, "web:1"))
	if r := mustOK(t, e.run("scale", "deploy/web", "--replicas=5")); r.out != "deployment.apps/web scaled\n" {
		t.Errorf("scale printed %q", r.out)
	}
	got, _ := client.For[*v1.Deployment](e.c).Get(ctxT(t), "default", "web")
	if got.Spec.GetReplicas() != 5 || got.Metadata.Generation != 2 {
		t.Errorf("deployment after scale: replicas %d generation %d", got.Spec.GetReplicas(), got.Metadata.Generation)
	}
	mustOK(t, e.run("scale", "rs", rs.Metadata.Name, "--replicas=0", "--current-replicas=3"))
	gotRS, _ := client.For[*v1.ReplicaSet](e.c).Get(ctxT(t), "default", rs.Metadata.Name)
	if gotRS.Spec.GetReplicas() != 0 {
		t.Errorf("replica set after scale: %d", gotRS.Spec.GetReplicas())
	}
	mustFail(t, e.run("scale", "deploy/web", "--replicas=1", "--current-replicas=3"), "expected 3 replicas (--current-replicas), found 5")
	mustFail(t, e.run("scale", "deploy/web"), "--replicas: required")
	mustFail(t, e.run("scale", "deploy/web", "--replicas=-1"), "must be 0 or more")
	mustFail(t, e.run("scale", "pod/x", "--replicas=1"), "not supported for pods")
	mustFail(t, e.run("scale", "deploy/nope", "--replicas=1"), "not found")
}

// history lists the replica sets' revisions; undo copies a revision's
// template (without the hash label) back into the deployment.
func TestRolloutHistoryAndUndo(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	d := mustCreate(t, e.c, testDeployment("web", 3, "web:2"))
	mustCreate(t, e.c, testReplicaSet(d, "web-one", "one", 1, 0, "web:1"))
	mustCreate(t, e.c, testReplicaSet(d, "web-two", "two", 2, 3, "web:2"))
	// A replica set owned by someone else is not history.
	other := testReplicaSet(d, "web-other", "other", 7, 0, "web:7")
	other.Metadata.OwnerReferences[0].Uid = "someone-else"
	mustCreate(t, e.c, other)

	r := mustOK(t, e.run("rollout", "history", "deploy/web"))
	want := "deployment.apps/web\nREVISION   CHANGE-CAUSE\n1          image web:1\n2          image web:2\n\n"
	if r.out != want {
		t.Errorf("history =\n%q\nwant\n%q", r.out, want)
	}
	r = mustOK(t, e.run("rollout", "history", "deployment", "web", "--revision=1"))
	if !strings.Contains(r.out, "deployment.apps/web with revision #1") || !strings.Contains(r.out, "web:1") || !strings.Contains(r.out, "pod-template-hash=one") {
		t.Errorf("history --revision=1:\n%s", r.out)
	}
	mustFail(t, e.run("rollout", "history", "deploy/web", "--revision=9"), "unable to find revision 9")

	if r := mustOK(t, e.run("rollout", "undo", "deploy/web")); r.out != "deployment.apps/web rolled back\n" {
		t.Errorf("undo printed %q", r.out)
	}
	api := client.For[*v1.Deployment](e.c)
	got, _ := api.Get(ctx, "default", "web")
	tmpl := got.Spec.Template
	if tmpl.Spec.Containers[0].Image != "web:1" || tmpl.Metadata.Labels[revision.PodTemplateHashLabel] != "" || tmpl.Metadata.Labels["app"] != "web" {
		t.Errorf("template after undo: %v", tmpl)
	}
	if got.Metadata.Annotations[deploy.ChangeCauseAnnotation] != "image web:1" || got.Metadata.Annotations[revision.Annotation] != "" {
		t.Errorf("annotations after undo: %v", got.Metadata.Annotations)
	}
	if r := mustOK(t, e.run("rollout", "undo", "deploy/web", "--to-revision=1")); !strings.Contains(r.out, "skipped rollback (current template already matches revision 1)") {
		t.Errorf("undo to the current template printed %q", r.out)
	}
	mustOK(t, e.run("rollout", "undo", "deploy/web", "--to-revision=2"))
	got, _ = api.Get(ctx, "default", "web")
	if got.Spec.Template.Spec.Containers[0].Image != "web:2" {
		t.Errorf("image after undo to 2: %s", got.Spec.Template.Spec.Containers[0].Image)
	}
	mustFail(t, e.run("rollout", "undo", "deploy/web", "--to-revision=5"), "unable to find revision 5 in history")
	mustOK(t, e.run("rollout", "pause", "deploy/web"))
	mustFail(t, e.run("rollout", "undo", "deploy/web"), "you cannot roll back a paused deployment")

	lone := mustCreate(t, e.c, testDeployment("lone", 1, "x:1"))
	mustCreate(t, e.c, testReplicaSet(lone, "lone-a", "a", 1, 1, "x:1"))
	mustFail(t, e.run("rollout", "undo", "deploy/lone"), "no previous revision to roll back to")
	mustFail(t, e.run("rollout", "undo", "rs/lone-a"), "not supported for replicasets")
}

func TestRolloutRestartPauseResume(t *testing.T) {
	e := newEnv(t)
	mustCreate(t, e.c, testDeployment("web", 1, "web:1"))
	api := client.For[*v1.Deployment](e.c)
	if r := mustOK(t, e.run("rollout", "restart", "deploy/web")); r.out != "deployment.apps/web restarted\n" {
		t.Errorf("restart printed %q", r.out)
	}
	d, _ := api.Get(ctxT(t), "default", "web")
	ts, err := time.Parse(time.RFC3339, d.Spec.Template.Metadata.Annotations[deploy.RestartedAtAnnotation])
	if err != nil || time.Since(ts) > time.Minute || d.Metadata.Generation != 2 {
		t.Errorf("template annotations after restart: %v (generation %d)", d.Spec.Template.Metadata.Annotations, d.Metadata.Generation)
	}
	if r := mustOK(t, e.run("rollout", "pause", "deploy/web")); r.out != "deployment.apps/web paused\n" {
		t.Errorf("pause printed %q", r.out)
	}
	d, _ = api.Get(ctxT(t), "default", "web")
	if !d.Spec.Paused {
		t.Error("not paused")
	}
	mustFail(t, e.run("rollout", "pause", "deploy/web"), "deployment.apps/web is already paused")
	mustFail(t, e.run("rollout", "restart", "deploy/web"), "can't restart paused deployment")
	if r := mustOK(t, e.run("rollout", "resume", "deploy/web")); r.out != "deployment.apps/web resumed\n" {
		t.Errorf("resume printed %q", r.out)
	}
	mustFail(t, e.run("rollout", "resume", "deploy/web"), "is not paused")
}

// rollout status prints kubectl's progress lines and exits 0 when the
// rollout completes, non-zero on ProgressDeadlineExceeded or --timeout.
func TestRolloutStatus(t *testing.T) {
	e := newEnv(t)
	mustCreate(t, e.c, testDeployment("web", 3, "web:1"))
	b := e.start("rollout", "status", "deploy/web")
	wait.Eventually(t, 10*time.Second, "the first line", outputHas(b.out, "Waiting for deployment spec update to be observed..."))
	steps := []struct {
		set  func(*v1.DeploymentStatus)
		line string
	}{
		{func(s *v1.DeploymentStatus) { s.Replicas, s.UpdatedReplicas = 1, 1 }, `Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...`},
		{func(s *v1.DeploymentStatus) { s.Replicas, s.UpdatedReplicas = 4, 3 }, `Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...`},
		{func(s *v1.DeploymentStatus) { s.Replicas, s.AvailableReplicas = 3, 1 }, `Waiting for deployment "web" rollout to finish: 1 of 3 updated replicas are available...`},
		{func(s *v1.DeploymentStatus) { s.AvailableReplicas, s.ReadyReplicas = 3, 3 }, `deployment "web" successfully rolled out`},
	}
	for _, s := range steps {
		setDeploymentStatus(t, e.c, "web", s.set)
		wait.Eventually(t, 10*time.Second, s.line, outputHas(b.out, s.line))
	}
	if code := b.wait(t, 10*time.Second); code != 0 {
		t.Errorf("rollout status exited %d after success: %s", code, b.err.String())
	}
	// Already done: one line, exit 0.
	if r := mustOK(t, e.run("rollout", "status", "deploy/web")); r.out != "deployment \"web\" successfully rolled out\n" {
		t.Errorf("status of a finished rollout printed %q", r.out)
	}

	// A new template that never becomes available: stuck, then the
	// controller reports ProgressDeadlineExceeded.
	if _, err := client.For[*v1.Deployment](e.c).Mutate(ctxT(t), "default", "web", false, func(d *v1.Deployment) error {
		d.Spec.Template.Spec.Containers[0].Image = "web:broken"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	setDeploymentStatus(t, e.c, "web", func(s *v1.DeploymentStatus) { s.Replicas, s.UpdatedReplicas, s.AvailableReplicas = 4, 1, 3 })
	mustFail(t, e.run("rollout", "status", "deploy/web", "--timeout=3s"), "timed out after 3s waiting for the rollout to finish")
	r := e.run("rollout", "status", "deploy/web", "--watch=false")
	if r.code != 0 || !strings.Contains(r.out, "1 out of 3 new replicas have been updated") {
		t.Errorf("--watch=false: %v", r)
	}
	b = e.start("rollout", "status", "deploy/web")
	wait.Eventually(t, 10*time.Second, "the progress line", outputHas(b.out, "1 out of 3 new replicas"))
	setDeploymentStatus(t, e.c, "web", func(s *v1.DeploymentStatus) {
		s.Conditions = []*v1.Condition{{Type: "Progressing", Status: "False", Reason: deploy.TimedOutReason, Message: `ReplicaSet "web-x" has timed out progressing.`}}
	})
	if code := b.wait(t, 10*time.Second); code == 0 {
		t.Errorf("rollout status exited 0 on ProgressDeadlineExceeded")
	}
	if !strings.Contains(b.err.String(), `deployment "web" exceeded its progress deadline`) {
		t.Errorf("stderr = %q", b.err.String())
	}
	mustFail(t, e.run("rollout", "status", "deploy/web"), "exceeded its progress deadline")
	mustFail(t, e.run("rollout", "status", "deploy/nope"), `nope" not found`)
}

// Daemon sets and stateful sets: history lists their ControllerRevisions,
// undo copies one's template back, restart annotates the template, pause
// is refused; stateful sets scale.
func TestRolloutDaemonSetAndStatefulSet(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	tmpl := func(image string) *v1.PodTemplateSpec {
		return &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "x"}},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "x", Image: image}}}}
	}
	sel := &v1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	ds := mustCreate(t, e.c, &v1.DaemonSet{Metadata: &v1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: &v1.DaemonSetSpec{Selector: sel, Template: tmpl("agent:2")}})
	sts := mustCreate(t, e.c, &v1.StatefulSet{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.StatefulSetSpec{Replicas: proto.Int32(3), ServiceName: "web", Selector: sel, Template: tmpl("web:2")}})
	for _, owner := range []struct {
		obj      v1.Object
		kind     string
		template *v1.PodTemplateSpec
	}{{ds, "DaemonSet", ds.Spec.Template}, {sts, "StatefulSet", sts.Spec.Template}} {
		name := owner.obj.GetMetadata().GetName()
		for rev, image := range []string{name + ":1", name + ":2"} {
			// Revision 2 is the owner's template as stored (defaulted),
			// as the controller copies it.
			rt := tmpl(image)
			if rev == 1 {
				rt = owner.template
			}
			data, err := manifest.RevisionData(rt)
			if err != nil {
				t.Fatal(err)
			}
			mustCreate(t, e.c, &v1.ControllerRevision{Metadata: &v1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, rev+1), Namespace: "default",
				Annotations:     map[string]string{deploy.ChangeCauseAnnotation: "image " + image},
				OwnerReferences: []*v1.OwnerReference{{ApiVersion: "apps/v1", Kind: owner.kind, Name: name, Uid: owner.obj.GetMetadata().GetUid(), Controller: true}}},
				Data: data, Revision: int64(rev + 1)})
		}
	}
	r := mustOK(t, e.run("rollout", "history", "daemonset/agent"))
	if want := "daemonset.apps/agent\nREVISION   CHANGE-CAUSE\n1          image agent:1\n2          image agent:2\n\n"; r.out != want {
		t.Errorf("history =\n%q\nwant\n%q", r.out, want)
	}
	r = mustOK(t, e.run("rollout", "history", "sts/web", "--revision=1"))
	if !strings.Contains(r.out, "statefulset.apps/web with revision #1") || !strings.Contains(r.out, "web:1") {
		t.Errorf("history --revision=1:\n%s", r.out)
	}
	if r := mustOK(t, e.run("rollout", "undo", "ds/agent")); r.out != "daemonset.apps/agent rolled back\n" {
		t.Errorf("undo printed %q", r.out)
	}
	gotDS, _ := client.For[*v1.DaemonSet](e.c).Get(ctx, "default", "agent")
	if gotDS.Spec.Template.Spec.Containers[0].Image != "agent:1" {
		t.Errorf("daemon set template after undo: %v", gotDS.Spec.Template)
	}
	if r := mustOK(t, e.run("rollout", "undo", "statefulset/web", "--to-revision=2")); !strings.Contains(r.out, "skipped rollback (current template already matches revision 2)") {
		t.Errorf("undo to the current revision printed %q", r.out)
	}
	if r := mustOK(t, e.run("rollout", "restart", "statefulset/web")); r.out != "statefulset.apps/web restarted\n" {
		t.Errorf("restart printed %q", r.out)
	}
	gotSTS, _ := client.For[*v1.StatefulSet](e.c).Get(ctx, "default", "web")
	if gotSTS.Spec.Template.Metadata.Annotations[deploy.RestartedAtAnnotation] == "" || gotSTS.Spec.Template.Spec.Containers[0].Image != "web:2" {
		t.Errorf("stateful set template after restart: %v", gotSTS.Spec.Template)
	}
	mustFail(t, e.run("rollout", "pause", "ds/agent"), "only deployments can be paused")
	r = mustOK(t, e.run("rollout", "status", "ds/agent", "--watch=false"))
	if r.out != "Waiting for daemon set spec update to be observed...\n" {
		t.Errorf("status printed %q", r.out)
	}
	if r := mustOK(t, e.run("scale", "statefulset", "web", "--replicas=1")); r.out != "statefulset.apps/web scaled\n" {
		t.Errorf("scale printed %q", r.out)
	}
	gotSTS, _ = client.For[*v1.StatefulSet](e.c).Get(ctx, "default", "web")
	if gotSTS.Spec.GetReplicas() != 1 {
		t.Errorf("stateful set replicas after scale: %d", gotSTS.Spec.GetReplicas())
	}
	mustFail(t, e.run("rollout", "history", "rs/x"), "not supported for replicasets")
}
