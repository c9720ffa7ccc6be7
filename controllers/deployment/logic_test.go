package deployment

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func dep(n int32, surge, unavail string) *v1.Deployment {
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: "web", Generation: 1},
		Spec: &v1.DeploymentSpec{Replicas: proto.Int32(n), ProgressDeadlineSeconds: proto.Int32(10),
			Strategy: &v1.DeploymentStrategy{Type: "RollingUpdate",
				RollingUpdate: &v1.RollingUpdateDeployment{MaxSurge: surge, MaxUnavailable: unavail}}},
	}
}

func TestFenceposts(t *testing.T) {
	cases := []struct {
		replicas            int32
		surge, unavail      string
		wantSurge, wantUnav int32
	}{
		{10, "1", "1", 1, 1},
		{10, "25%", "25%", 3, 2}, // 2.5: surge rounds up, unavailable down
		{3, "25%", "25%", 1, 0},  // 0.75: surge rounds up to 1, unavailable down to 0
		{4, "0", "0%", 0, 1},     // both zero: unavailable becomes 1
		{1, "0%", "10%", 0, 1},   // 0.1 rounds to 0 for both: unavailable becomes 1
		{10, "100%", "0", 10, 0},
		{0, "25%", "25%", 0, 1},
	}
	for _, c := range cases {
		d := dep(c.replicas, c.surge, c.unavail)
		s, u, err := fenceposts(d)
		if err != nil {
			t.Fatal(err)
		}
		if s != c.wantSurge || u != c.wantUnav {
			t.Errorf("%d replicas surge %s unavailable %s: got %d/%d, want %d/%d", c.replicas, c.surge, c.unavail, s, u, c.wantSurge, c.wantUnav)
		}
	}
	if _, _, err := fenceposts(dep(3, "x%", "1")); err == nil {
		t.Error("bad maxSurge accepted")
	}
	if got := maxUnavailable(dep(2, "0", "5")); got != 2 {
		t.Errorf("maxUnavailable is capped at replicas: got %d", got)
	}
}

func template(image string, lbl map[string]string) *v1.PodTemplateSpec {
	return &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: image}}}}
}

func TestTemplateHash(t *testing.T) {
	a := template("nginx:1", map[string]string{"app": "web"})
	if templateHash(a, 0) != templateHash(proto.Clone(a).(*v1.PodTemplateSpec), 0) {
		t.Fatal("hash not deterministic")
	}
	if templateHash(a, 0) == templateHash(template("nginx:2", map[string]string{"app": "web"}), 0) {
		t.Fatal("different templates hash alike")
	}
	if templateHash(a, 0) == templateHash(a, 1) {
		t.Fatal("collision count ignored")
	}
	withHash := template("nginx:1", map[string]string{"app": "web", PodTemplateHashLabel: "abc"})
	if !equalIgnoreHash(a, withHash) || equalIgnoreHash(a, template("nginx:2", map[string]string{"app": "web"})) {
		t.Fatal("equalIgnoreHash wrong")
	}
	// kubectl rollout undo sends the template through Kubernetes' Go
	// types: an empty resources is no resources.
	undone := template("nginx:1", map[string]string{"app": "web"})
	undone.Spec.Containers[0].Resources = &v1.ResourceRequirements{}
	if !equalIgnoreHash(a, undone) {
		t.Fatal("equalIgnoreHash tells resources: {} from none")
	}
	undone.Spec.Containers[0].Resources.Limits = map[string]string{"cpu": "1"}
	if equalIgnoreHash(a, undone) {
		t.Fatal("equalIgnoreHash ignores resources")
	}
	for _, r := range templateHash(a, 0) {
		if r == 'a' || r == 'e' || r == 'i' || r == 'o' || r == 'u' {
			t.Fatalf("hash %q has a vowel", templateHash(a, 0))
		}
	}
}

func TestRevisionAnnotations(t *testing.T) {
	d := dep(3, "1", "0")
	d.Metadata.Annotations = map[string]string{"kubernetes.io/change-cause": "v2", RevisionAnnotation: "9"}
	rs := &v1.ReplicaSet{Metadata: &v1.ObjectMeta{Annotations: map[string]string{RevisionAnnotation: "1"}}}
	if !setNewRSAnnotations(d, rs, 3, true) {
		t.Fatal("no change reported")
	}
	a := rs.Metadata.Annotations
	if a[RevisionAnnotation] != "3" || a[RevisionHistoryAnnotation] != "1" || a["kubernetes.io/change-cause"] != "v2" {
		t.Fatalf("annotations %v", a)
	}
	setNewRSAnnotations(d, rs, 5, true)
	if a[RevisionHistoryAnnotation] != "1,3" {
		t.Fatalf("history %q", a[RevisionHistoryAnnotation])
	}
	if setNewRSAnnotations(d, rs, 5, true) {
		t.Fatal("unchanged annotations reported as changed")
	}
	fresh := &v1.ReplicaSet{Metadata: &v1.ObjectMeta{}}
	setNewRSAnnotations(d, fresh, 1, false)
	if fresh.Metadata.Annotations[DesiredReplicasAnnotation] != "3" || fresh.Metadata.Annotations[MaxReplicasAnnotation] != "4" {
		t.Fatalf("replicas annotations %v", fresh.Metadata.Annotations)
	}
}

func rs(spec, status, avail int32) *v1.ReplicaSet {
	return &v1.ReplicaSet{Metadata: &v1.ObjectMeta{Name: "rs"}, Spec: &v1.ReplicaSetSpec{Replicas: proto.Int32(spec)},
		Status: &v1.ReplicaSetStatus{Replicas: status, AvailableReplicas: avail}}
}

func TestNewRSReplicas(t *testing.T) {
	c := &Controller{}
	d := dep(10, "1", "1")
	cases := []struct {
		name     string
		old, nrs *v1.ReplicaSet
		want     int32
	}{
		{"start of rollout: one surge pod", rs(10, 10, 10), rs(0, 0, 0), 1},
		{"old scaled down but its pod not yet gone", rs(9, 10, 10), rs(1, 1, 0), 1},
		{"old pod gone: one more", rs(9, 9, 9), rs(1, 1, 1), 2},
		{"never beyond replicas", rs(0, 0, 0), rs(9, 9, 9), 10},
	}
	for _, tc := range cases {
		got, err := c.newRSReplicas(d, []*v1.ReplicaSet{tc.old, tc.nrs}, tc.nrs)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
	if got := availableCount([]*v1.ReplicaSet{rs(9, 10, 10)}); got != 9 {
		t.Errorf("available of a scaled-down RS is capped at its spec: %d", got)
	}
}

func TestTimedOut(t *testing.T) {
	now := time.Unix(1000, 0)
	d := dep(3, "1", "0")
	st := &v1.DeploymentStatus{}
	if timedOut(d, st, now) {
		t.Fatal("no condition: not timed out")
	}
	st.Conditions = []*v1.Condition{{Type: "Progressing", Status: "True", Reason: ReasonRSUpdated, LastUpdateTime: timestamppb.New(now.Add(-11 * time.Second))}}
	if !timedOut(d, st, now) {
		t.Fatal("11s without progress and a 10s deadline: timed out")
	}
	st.Conditions[0].LastUpdateTime = timestamppb.New(now.Add(-5 * time.Second))
	if timedOut(d, st, now) {
		t.Fatal("5s: not yet")
	}
	st.Conditions[0].Reason = ReasonNewRSAvailable
	st.Conditions[0].LastUpdateTime = timestamppb.New(now.Add(-time.Hour))
	if timedOut(d, st, now) {
		t.Fatal("a complete rollout never times out")
	}
}
