package nodelifecycle

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestEvictionTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	unreachable := &v1.Taint{Key: TaintUnreachable, Effect: "NoExecute", TimeAdded: timestamppb.New(t0)}
	custom := &v1.Taint{Key: "example.com/maintenance", Value: "yes", Effect: "NoExecute"}
	noSchedule := &v1.Taint{Key: "example.com/gpu", Effect: "NoSchedule"}
	seen := func(*v1.Taint) time.Time { return t0.Add(time.Minute) }
	pod := func(tols ...*v1.Toleration) *v1.Pod { return &v1.Pod{Spec: &v1.PodSpec{Tolerations: tols}} }
	cases := []struct {
		name   string
		pod    *v1.Pod
		taints []*v1.Taint
		want   time.Time
		due    bool
	}{
		{"no toleration: the default", pod(), []*v1.Taint{unreachable}, t0.Add(5 * time.Second), true},
		{"own tolerationSeconds wins (longer)", pod(&v1.Toleration{Key: TaintUnreachable, Operator: "Exists", Effect: "NoExecute", TolerationSeconds: proto.Int64(300)}),
			[]*v1.Taint{unreachable}, t0.Add(300 * time.Second), true},
		{"own tolerationSeconds wins (shorter)", pod(&v1.Toleration{Key: TaintUnreachable, Operator: "Exists", TolerationSeconds: proto.Int64(0)}),
			[]*v1.Taint{unreachable}, t0, true},
		{"tolerated forever", pod(&v1.Toleration{Key: TaintUnreachable, Operator: "Exists", Effect: "NoExecute"}), []*v1.Taint{unreachable}, time.Time{}, false},
		{"empty key Exists tolerates everything", pod(&v1.Toleration{Operator: "Exists"}), []*v1.Taint{unreachable, custom}, time.Time{}, false},
		{"untolerated custom taint: at once from first sight", pod(), []*v1.Taint{custom}, t0.Add(time.Minute), true},
		{"Equal needs the value", pod(&v1.Toleration{Key: "example.com/maintenance", Operator: "Equal", Value: "no"}), []*v1.Taint{custom}, t0.Add(time.Minute), true},
		{"Equal with the value", pod(&v1.Toleration{Key: "example.com/maintenance", Value: "yes"}), []*v1.Taint{custom}, time.Time{}, false},
		{"NoSchedule does not evict", pod(), []*v1.Taint{noSchedule}, time.Time{}, false},
		{"earliest taint decides", pod(&v1.Toleration{Key: "example.com/maintenance", Value: "yes"}), []*v1.Taint{custom, unreachable}, t0.Add(5 * time.Second), true},
	}
	for _, c := range cases {
		got, due := evictionTime(c.pod, c.taints, 5*time.Second, seen)
		if due != c.due || (due && !got.Equal(c.want)) {
			t.Errorf("%s: got %v %v, want %v %v", c.name, got, due, c.want, c.due)
		}
	}
}

func TestDisruption(t *testing.T) {
	cases := []struct {
		total, down int
		want        string
	}{
		{3, 0, stateNormal},
		{3, 1, stateNormal},
		{2, 1, stateNormal},
		{3, 3, stateFull},
		{1, 1, stateFull},
		{4, 3, statePartial},  // 75%, more than two
		{10, 5, stateNormal},  // 50% < 55%
		{10, 6, statePartial}, // 60%
		{0, 0, stateNormal},
	}
	for _, c := range cases {
		if got := disruption(c.total, c.down, 0.55); got != c.want {
			t.Errorf("%d of %d down: %s, want %s", c.down, c.total, got, c.want)
		}
	}
}

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := newTokenBucket(10, 2, t0)
	if b.take(10, t0) != 0 || b.take(10, t0) != 0 {
		t.Fatal("burst of 2 not available")
	}
	if w := b.take(10, t0); w != 100*time.Millisecond {
		t.Fatalf("third token: wait %s, want 100ms", w)
	}
	if b.take(10, t0.Add(100*time.Millisecond)) != 0 {
		t.Fatal("token not refilled after 100ms")
	}
	if b.take(0, t0.Add(time.Hour)) == 0 {
		t.Fatal("rate 0 must never allow")
	}
}
