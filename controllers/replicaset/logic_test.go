package replicaset

import (
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

type podOpt func(*v1.Pod)

func node(n string) podOpt   { return func(p *v1.Pod) { p.Spec.NodeName = n } }
func phase(ph string) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }
func created(s int) podOpt {
	return func(p *v1.Pod) { p.Metadata.CreationTimestamp = timestamppb.New(time.Unix(int64(s), 0)) }
}
func restartsN(n int32) podOpt {
	return func(p *v1.Pod) { p.Status.ContainerStatuses = []*v1.ContainerStatus{{RestartCount: n}} }
}
func readyAt(s int) podOpt {
	return func(p *v1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, &v1.Condition{Type: "Ready", Status: "True",
			LastTransitionTime: timestamppb.New(time.Unix(int64(s), 0))})
	}
}

func pod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, CreationTimestamp: timestamppb.New(time.Unix(0, 0))},
		Spec: &v1.PodSpec{}, Status: &v1.PodStatus{Phase: "Running"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestDeletionPreference(t *testing.T) {
	cases := []struct {
		name  string
		first *v1.Pod // deleted first
		then  *v1.Pod
	}{
		{"unscheduled before scheduled", pod("a", phase("Pending")), pod("b", node("n1"), readyAt(5))},
		{"pending before running", pod("a", node("n1"), phase("Pending")), pod("b", node("n1"))},
		{"unknown before running", pod("a", node("n1"), phase("Unknown")), pod("b", node("n1"))},
		{"not ready before ready", pod("a", node("n1")), pod("b", node("n1"), readyAt(5))},
		{"ready for less time first", pod("a", node("n1"), readyAt(9)), pod("b", node("n1"), readyAt(5))},
		{"more restarts first", pod("a", node("n1"), readyAt(5), restartsN(3)), pod("b", node("n1"), readyAt(5))},
		{"newest first", pod("a", node("n1"), readyAt(5), created(9)), pod("b", node("n1"), readyAt(5), created(1))},
		{"unscheduled beats newest", pod("a", created(1)), pod("b", node("n1"), created(9))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !deleteFirst(c.first, c.then) || deleteFirst(c.then, c.first) {
				t.Fatalf("want %s deleted before %s", c.first.Metadata.Name, c.then.Metadata.Name)
			}
			got := podsToDelete([]*v1.Pod{c.then, c.first}, 1)
			if got[0] != c.first {
				t.Fatalf("podsToDelete picked %s", got[0].Metadata.Name)
			}
		})
	}
}

func TestSlowStart(t *testing.T) {
	cases := []struct {
		name      string
		count     int
		failAfter int // calls that succeed before every call fails; -1 never fails
		wantCalls int
		wantOK    int
	}{
		{"all succeed in 1,2,4,3", 10, -1, 10, 10},
		{"first call fails: one call", 10, 0, 1, 0},
		{"fails in the third batch: stops after it", 10, 3, 7, 3},
		{"zero", 0, -1, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			ok, err := controller.SlowStart(c.count, 1, func() error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if c.failAfter >= 0 && calls > c.failAfter {
					return errors.New("quota")
				}
				return nil
			})
			if calls != c.wantCalls || ok != c.wantOK || (err != nil) != (c.failAfter >= 0 && c.count > 0) {
				t.Fatalf("calls %d ok %d err %v; want calls %d ok %d", calls, ok, err, c.wantCalls, c.wantOK)
			}
		})
	}
}

func TestCalculateStatus(t *testing.T) {
	now := time.Unix(100, 0)
	rs := &v1.ReplicaSet{
		Metadata: &v1.ObjectMeta{Name: "rs", Generation: 7},
		Spec: &v1.ReplicaSetSpec{Replicas: proto.Int32(4), MinReadySeconds: 10,
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "fe"}}}},
	}
	lbl := func(l map[string]string) podOpt { return func(p *v1.Pod) { p.Metadata.Labels = l } }
	full := map[string]string{"app": "web", "tier": "fe"}
	pods := []*v1.Pod{
		pod("a", lbl(full), readyAt(50)),               // available
		pod("b", lbl(full), readyAt(95)),               // ready, not yet available
		pod("c", lbl(map[string]string{"app": "web"})), // not fully labelled, not ready
		pod("d", lbl(full), phase("Pending")),          // not ready
	}
	st := calculateStatus(rs, pods, nil, now)
	if st.Replicas != 4 || st.FullyLabeledReplicas != 3 || st.ReadyReplicas != 2 || st.AvailableReplicas != 1 || st.ObservedGeneration != 7 {
		t.Fatalf("status %v", st)
	}
	st = calculateStatus(rs, pods[:2], errors.New("quota exceeded"), now)
	if c := st.Conditions; len(c) != 1 || c[0].Type != "ReplicaFailure" || c[0].Reason != "FailedCreate" {
		t.Fatalf("conditions %v", c)
	}
	rs.Status = st
	if st := calculateStatus(rs, pods[:2], nil, now); len(st.Conditions) != 0 {
		t.Fatalf("ReplicaFailure not cleared: %v", st.Conditions)
	}
}
