package eviction

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestParseThresholds(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{in: DefaultEvictionHard, want: "[imagefs.available<15% memory.available<100Mi nodefs.available<10%]"},
		{in: " memory.available < 1Gi , nodefs.available<2.5% ", want: "[memory.available<1Gi nodefs.available<2.5%]"},
		{in: "", want: "[]"},
		{in: "memory.available>1Gi", err: "want SIGNAL<VALUE"},
		{in: "cpu.available<1", err: `unknown signal "cpu.available"`},
		{in: "nodefs.available<0%", err: "must be in (0, 100]"},
		{in: "nodefs.available<101%", err: "must be in (0, 100]"},
		{in: "memory.available<lots", err: "want a positive quantity"},
		{in: "memory.available<1Gi,memory.available<2Gi", err: "memory.available given twice"},
	} {
		ts, err := ParseThresholds(c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--eviction-hard") {
				t.Errorf("ParseThresholds(%q) error %v, want %q", c.in, err, c.err)
			}
		case err != nil:
			t.Errorf("ParseThresholds(%q): %v", c.in, err)
		case fmt.Sprint(ts) != c.want:
			t.Errorf("ParseThresholds(%q) = %v, want %s", c.in, ts, c.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	ts, _ := ParseThresholds(DefaultEvictionHard)
	obs := map[string]Observation{
		MemoryAvailable:  {Available: 50 << 20, Capacity: 8 << 30},
		NodeFSAvailable:  {Available: 20 << 30, Capacity: 100 << 30, Path: "/var"},
		ImageFSAvailable: {Available: 10 << 30, Capacity: 100 << 30, Path: "/var/lib/containerd"},
	}
	cr := evaluate(ts, obs)
	if got := signals(cr); got != "imagefs.available,memory.available" {
		t.Fatalf("crossed %s", got)
	}
	if msg := cr[1].message(); msg != "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi." {
		t.Errorf("message %q", msg)
	}
	if msg := cr[0].message(); msg != "The node was low on resource: ephemeral-storage (imagefs). Threshold quantity: 15%, available: 10Gi." {
		t.Errorf("message %q", msg)
	}
}

func pod(name, qos string, priority int32, created int) *v1.Pod {
	p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Uid: name,
		CreationTimestamp: timestamppb.New(time.Unix(int64(created), 0))},
		Spec: &v1.PodSpec{Priority: priority, Containers: []*v1.Container{{Name: "c"}}}, Status: &v1.PodStatus{Phase: "Running"}}
	switch qos {
	case Burstable:
		p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Requests: map[string]string{"memory": "100Mi"}}
	case Guaranteed:
		p.Spec.Containers[0].Resources = &v1.ResourceRequirements{
			Requests: map[string]string{"cpu": "1", "memory": "100Mi"}, Limits: map[string]string{"cpu": "1", "memory": "100Mi"}}
	}
	return p
}

func TestRank(t *testing.T) {
	done := pod("done", BestEffort, 0, 9)
	done.Status.Phase = "Succeeded"
	deleting := pod("deleting", BestEffort, 0, 9)
	deleting.Metadata.DeletionTimestamp = timestamppb.Now()
	pods := []*v1.Pod{
		pod("g", Guaranteed, 0, 1), pod("b-small", Burstable, 0, 1), pod("be-old", BestEffort, 0, 1),
		pod("b-big", Burstable, 0, 2), pod("be-new", BestEffort, 0, 2), pod("be-important", BestEffort, 1000, 3), done, deleting,
	}
	for _, p := range pods[:6] {
		if got := qosClass(p); !strings.HasPrefix(p.Metadata.Name, map[string]string{BestEffort: "be", Burstable: "b-", Guaranteed: "g"}[got]) {
			t.Errorf("qosClass(%s) = %s", p.Metadata.Name, got)
		}
	}
	names := func(ps []*v1.Pod) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Metadata.Name)
		}
		return strings.Join(s, " ")
	}
	if got := names(rank(pods, nil)); got != "be-new be-old be-important b-big b-small g" {
		t.Errorf("rank without usage: %s", got)
	}
	usage := map[string]int64{"b-small": 500 << 20, "b-big": 150 << 20}
	if got := names(rank(pods, usage)); got != "be-new be-old be-important b-small b-big g" {
		t.Errorf("rank by memory above request: %s", got)
	}
}

// TestRankPodLevelRequests: memory above the request is measured against
// the pod-level request (spec.resources) where the pod sets one, not its
// containers' sum; a sidecar's request counts with the app's.
func TestRankPodLevelRequests(t *testing.T) {
	// Both use 400Mi. "roomy" requests 100Mi per container but 1Gi for
	// the pod: it is under its request; "tight" has no pod-level request
	// and its containers' 100Mi + 200Mi (the sidecar's) make 300Mi.
	roomy := pod("roomy", Burstable, 0, 1)
	roomy.Spec.Resources = &v1.ResourceRequirements{Requests: map[string]string{"memory": "1Gi"}}
	tight := pod("tight", Burstable, 0, 1)
	tight.Spec.InitContainers = []*v1.Container{{Name: "proxy", RestartPolicy: "Always",
		Resources: &v1.ResourceRequirements{Requests: map[string]string{"memory": "200Mi"}}}}
	for _, tc := range []struct {
		p    *v1.Pod
		want int64
	}{{roomy, 1 << 30}, {tight, 300 << 20}, {pod("be", BestEffort, 0, 1), 0}} {
		if got := memoryRequest(tc.p); got != tc.want {
			t.Errorf("memoryRequest(%s) = %d, want %d", tc.p.Metadata.Name, got, tc.want)
		}
	}
	usage := map[string]int64{"roomy": 400 << 20, "tight": 400 << 20}
	got := rank([]*v1.Pod{roomy, tight}, usage)
	if len(got) != 2 || got[0].Metadata.Name != "tight" {
		t.Errorf("rank: %s first, want tight (100Mi over its request; roomy is 624Mi under its pod-level request)", got[0].Metadata.Name)
	}
}

type fakeEvictor struct {
	mu      sync.Mutex
	evicted []string
	msgs    []string
}

func (f *fakeEvictor) Evict(uid, msg string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evicted = append(f.evicted, uid)
	f.msgs = append(f.msgs, msg)
	return true
}

type fakeRecorder struct{ reasons []string }

func (r *fakeRecorder) Eventf(_ v1.Object, typ, reason, format string, args ...any) {
	r.reasons = append(r.reasons, typ+"/"+reason+": "+fmt.Sprintf(format, args...))
}

// TestSynchronize: under disk pressure one pod goes per round, best
// effort first; the pressure is reported for the node's conditions and
// an event is recorded on the node once; without pressure nothing goes.
func TestSynchronize(t *testing.T) {
	ts, _ := ParseThresholds("memory.available<100Mi,nodefs.available<10%")
	free := int64(50 << 30)
	pods := []*v1.Pod{pod("g", Guaranteed, 0, 1), pod("be", BestEffort, 0, 1), pod("b", Burstable, 0, 1)}
	ev := &fakeEvictor{}
	rec := &fakeRecorder{}
	m, err := New(Config{Thresholds: ts, Evictor: ev, Recorder: rec,
		Pods: func() []*v1.Pod { return pods },
		Node: func() *v1.Node { return &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1"}} },
		Observe: func() map[string]Observation {
			return map[string]Observation{
				MemoryAvailable: {Available: 4 << 30, Capacity: 8 << 30},
				NodeFSAvailable: {Available: free, Capacity: 100 << 30, Path: "/var/lib/tugboat"},
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m.Synchronize(ctx)
	if len(ev.evicted) != 0 {
		t.Fatalf("evicted %v without pressure", ev.evicted)
	}
	if p, _ := m.DiskPressure(); p {
		t.Error("disk pressure without pressure")
	}

	free = 5 << 30
	m.Synchronize(ctx)
	m.Synchronize(ctx) // the same pod is not asked twice while it stops
	if fmt.Sprint(ev.evicted) != "[be b]" {
		t.Errorf("evicted %v, want be then b", ev.evicted)
	}
	if !strings.Contains(ev.msgs[0], "The node was low on resource: ephemeral-storage (nodefs). Threshold quantity: 10%, available: 5Gi.") {
		t.Errorf("message %q", ev.msgs[0])
	}
	p, msg := m.DiskPressure()
	if !p || msg != "nodefs.available 5Gi < 10Gi (nodefs.available<10%) on the file system of /var/lib/tugboat" {
		t.Errorf("DiskPressure = %v, %q", p, msg)
	}
	if mp, _ := m.MemoryPressure(); mp {
		t.Error("memory pressure reported for a disk signal")
	}
	if len(rec.reasons) != 1 || rec.reasons[0] != "Warning/EvictionThresholdMet: Attempting to reclaim nodefs" {
		t.Errorf("node events %v", rec.reasons)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without Pods and Evictor")
	}
}
