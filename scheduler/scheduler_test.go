package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// checkNoOvercommit fails the test if the pods bound to any node request
// more cpu, memory or pods than the node's allocatable.
func checkNoOvercommit(t *testing.T, c *client.Client) (bound int) {
	t.Helper()
	nodes, _, err := client.For[*v1.Node](c).List(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type use struct{ cpu, mem, pods int64 }
	used := map[string]*use{}
	for _, p := range listPods(t, c) {
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		u := used[p.Spec.NodeName]
		if u == nil {
			u = &use{}
			used[p.Spec.NodeName] = u
		}
		for _, ctr := range p.Spec.Containers {
			if q, ok := ctr.Resources.GetRequests()["cpu"]; ok {
				u.cpu += resource.MustParse(q).MilliValue()
			}
			if q, ok := ctr.Resources.GetRequests()["memory"]; ok {
				u.mem += resource.MustParse(q).Value()
			}
		}
		u.pods++
	}
	for _, n := range nodes {
		u := used[n.Metadata.Name]
		if u == nil {
			continue
		}
		a := n.Status.Allocatable
		if u.cpu > resource.MustParse(a["cpu"]).MilliValue() || u.mem > resource.MustParse(a["memory"]).Value() || u.pods > resource.MustParse(a["pods"]).Value() {
			t.Errorf("node %s overcommitted: %dm cpu, %d bytes, %d pods requested of %v", n.Metadata.Name, u.cpu, u.mem, u.pods, a)
		}
	}
	return bound
}

func TestRandomPodsNeverOvercommit(t *testing.T) {
	srv := apiservertest.Start(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		createNode(t, srv.Client, makeNode(fmt.Sprintf("node-%02d", i), fmt.Sprint(2+rng.IntN(6)), fmt.Sprintf("%dGi", 4+rng.IntN(12))))
	}
	var pods []*v1.Pod
	for i := 0; i < 500; i++ {
		cpu := fmt.Sprintf("%dm", 50*(1+rng.IntN(10)))
		mem := fmt.Sprintf("%dMi", 64*(1+rng.IntN(16)))
		if rng.IntN(10) == 0 {
			cpu, mem = "", "" // best-effort pods count towards pods only
		}
		pods = append(pods, makePod(fmt.Sprintf("pod-%03d", i), cpu, mem))
	}
	createPods(t, srv.Client, pods)
	startScheduler(t, srv, Config{})
	wait.Eventually(t, 60*time.Second, "every pod bound or unschedulable", func() error {
		return settled(listPods(t, srv.Client))
	})
	bound := checkNoOvercommit(t, srv.Client)
	if bound < 200 || bound == 500 {
		t.Errorf("%d of 500 pods bound: the test wants a cluster that fits many but not all", bound)
	}
	t.Logf("%d of 500 pods bound", bound)
}

func TestConstraintsHonoured(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	createNode(t, c, makeNode("hdd-1", "4", "8Gi", label("disk", "hdd")))
	createNode(t, c, makeNode("hdd-2", "4", "8Gi", label("disk", "hdd")))
	createNode(t, c, makeNode("ssd-1", "4", "8Gi", label("disk", "ssd")))
	createNode(t, c, makeNode("ssd-cordoned", "4", "8Gi", label("disk", "ssd"), func(n *v1.Node) { n.Spec.Unschedulable = true }))
	createNode(t, c, makeNode("gpu-1", "4", "8Gi", label("accelerator", "gpu"), taint("dedicated", "gpu", "NoSchedule")))
	allowHostPorts(t, c)
	var pods []*v1.Pod
	for i := 0; i < 6; i++ {
		pods = append(pods, makePod(fmt.Sprintf("ssd-%d", i), "100m", "64Mi", nodeSelector("disk", "ssd")))
		pods = append(pods, makePod(fmt.Sprintf("any-%d", i), "100m", "64Mi"))
		pods = append(pods, makePod(fmt.Sprintf("gpu-%d", i), "100m", "64Mi", nodeSelector("accelerator", "gpu"), toleration("dedicated", "gpu")))
	}
	for i := 0; i < 4; i++ {
		pods = append(pods, makePod(fmt.Sprintf("port-%d", i), "100m", "64Mi", hostPortOpt(8080), nodeSelector("disk", "hdd")))
	}
	pods = append(pods, makePod("needs-gpu-untolerated", "100m", "64Mi", nodeSelector("accelerator", "gpu")))
	createPods(t, c, pods)
	startScheduler(t, srv, Config{})
	wait.Eventually(t, 30*time.Second, "every pod bound or unschedulable", func() error {
		return settled(listPods(t, c))
	})
	ports := map[string]int{}
	for _, p := range listPods(t, c) {
		name, node := p.Metadata.Name, p.Spec.NodeName
		switch {
		case node == "ssd-cordoned":
			t.Errorf("pod %s bound to the cordoned node", name)
		case strings.HasPrefix(name, "ssd-") && node != "ssd-1":
			t.Errorf("pod %s with nodeSelector disk=ssd on %q", name, node)
		case strings.HasPrefix(name, "gpu-") && node != "gpu-1":
			t.Errorf("pod %s tolerating the gpu taint and selecting it on %q", name, node)
		case strings.HasPrefix(name, "any-") && (node == "gpu-1" || node == ""):
			t.Errorf("pod %s without toleration on %q", name, node)
		case strings.HasPrefix(name, "port-"):
			if node != "" {
				ports[node]++
			}
		case name == "needs-gpu-untolerated":
			// The cordoned node is refused for being cordoned: the first filter
			// that refuses a node names the reason.
			want := "0/5 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
			if node != "" {
				t.Errorf("pod %s bound to %s despite the taint", name, node)
			} else if cond := podScheduledCondition(p); cond.GetMessage() != want {
				t.Errorf("pod %s condition %q, want %q", name, cond.GetMessage(), want)
			}
		}
	}
	// Two hdd nodes: two of the four pods wanting host port 8080 fit, one per node.
	if len(ports) != 2 || ports["hdd-1"] != 1 || ports["hdd-2"] != 1 {
		t.Errorf("host-port pods per node %v, want one on each hdd node", ports)
	}
	for _, p := range listPods(t, c) {
		if strings.HasPrefix(p.Metadata.Name, "port-") && p.Spec.NodeName == "" {
			want := "0/5 nodes are available: 2 node(s) didn't have free ports for the requested pod ports, 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable. preemption: 0/5 nodes are available: 3 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
			if got := podScheduledCondition(p).GetMessage(); got != want {
				t.Errorf("pod %s: %q, want %q", p.Metadata.Name, got, want)
			}
		}
	}
}

func TestUnschedulableExplainedThenScheduled(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	for i := 1; i <= 3; i++ {
		createNode(t, c, makeNode(fmt.Sprintf("small-%d", i), "1", "4Gi", label("pool", "main")))
	}
	createNode(t, c, makeNode("other", "8", "16Gi", label("pool", "batch")))
	createNode(t, c, makeNode("gpu", "8", "16Gi", label("pool", "main"), taint("dedicated", "gpu", "NoSchedule")))
	s := startScheduler(t, srv, Config{})
	createPods(t, c, []*v1.Pod{makePod("big", "2", "1Gi", nodeSelector("pool", "main"))})

	want := "0/5 nodes are available: 3 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/5 nodes are available: 3 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
	wait.Eventually(t, 20*time.Second, "the unschedulable condition", func() error {
		cond := podScheduledCondition(getPod(t, c, "big"))
		if cond != nil {
			return nil
		}
		return errors.New("no PodScheduled condition yet")
	})
	cond := podScheduledCondition(getPod(t, c, "big"))
	if cond.Status != "False" || cond.Reason != "Unschedulable" || cond.Message != want {
		t.Errorf("condition %s=%s reason %q message %q\nwant False, Unschedulable, %q", cond.Type, cond.Status, cond.Reason, cond.Message, want)
	}
	wait.Eventually(t, 20*time.Second, "a FailedScheduling event", func() error {
		evs := events(t, c, "big", "FailedScheduling")
		if len(evs) > 0 {
			return nil
		}
		return errors.New("no FailedScheduling event")
	})
	evs := events(t, c, "big", "FailedScheduling")
	if len(evs) != 1 || evs[0].Message != want || evs[0].Type != "Warning" {
		t.Errorf("FailedScheduling events %v, want one Warning with the message", evs)
	}
	if got := s.queue.Len().Unschedulable; got != 1 {
		t.Errorf("%d pods wait in the unschedulable queue, want 1", got)
	}

	createNode(t, c, makeNode("large", "4", "8Gi", label("pool", "main")))
	wait.Eventually(t, 20*time.Second, "the pod bound once a fitting node exists", func() error {
		p := getPod(t, c, "big")
		if p.Spec.NodeName != "" {
			return nil
		}
		return fmt.Errorf("pod unbound, PodScheduled %v", podScheduledCondition(p))
	})
	p := getPod(t, c, "big")
	if p.Spec.NodeName != "large" {
		t.Errorf("bound to %s, want large", p.Spec.NodeName)
	}
	if cond := podScheduledCondition(p); cond.Status != "True" {
		t.Errorf("PodScheduled %s after binding, want True", cond.Status)
	}
	wait.Eventually(t, 20*time.Second, "a Scheduled event naming the node", func() error {
		evs := events(t, c, "big", "Scheduled")
		if len(evs) == 1 && strings.HasSuffix(evs[0].Message, " to large") {
			return nil
		}
		return fmt.Errorf("Scheduled events %v", evs)
	})
}

func TestRetriedUnschedulableEventIsAggregated(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	createNode(t, c, makeNode("small", "1", "1Gi"))
	startScheduler(t, srv, Config{})
	createPods(t, c, []*v1.Pod{makePod("big", "2", "")})
	wait.Eventually(t, 20*time.Second, "a FailedScheduling event", func() error {
		if evs := events(t, c, "big", "FailedScheduling"); len(evs) != 1 {
			return fmt.Errorf("%d FailedScheduling events, want 1", len(evs))
		}
		return nil
	})
	// Growing the node (not enough) retries the pod, which still does not
	// fit; a label change would not retry it (labels cannot help).
	nodes := client.For[*v1.Node](c)
	for _, cpu := range []string{"1200m", "1500m"} {
		if _, err := nodes.Mutate(context.Background(), "", "small", true, func(n *v1.Node) error {
			n.Status.Allocatable["cpu"] = cpu
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	wait.Eventually(t, 20*time.Second, "the retries aggregated into one event with a count", func() error {
		evs := events(t, c, "big", "FailedScheduling")
		if len(evs) == 1 && evs[0].Count >= 2 {
			return nil
		}
		return fmt.Errorf("%d events, %v", len(evs), evs)
	})
}

func TestTwoSchedulersNeverDoubleBindNorOvercommit(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	for i := 0; i < 10; i++ {
		createNode(t, c, makeNode(fmt.Sprintf("node-%d", i), "4", "8Gi"))
	}
	a := startScheduler(t, srv, Config{})
	b := startScheduler(t, srv, Config{})
	var pods []*v1.Pod
	for i := 0; i < 300; i++ {
		pods = append(pods, makePod(fmt.Sprintf("pod-%03d", i), "250m", "256Mi"))
	}
	createPods(t, c, pods) // 300 x 250m = 75 cores wanted, 40 offered
	wait.Eventually(t, 60*time.Second, "every pod bound or unschedulable", func() error {
		return settled(listPods(t, c))
	})
	bound := checkNoOvercommit(t, c)
	if bound != 160 {
		t.Errorf("%d pods bound, want 160 (10 nodes x 16 pods of 250m)", bound)
	}
	okA := counter(t, a.Scheduler, "tugboat_scheduler_binds_total", "ok")
	okB := counter(t, b.Scheduler, "tugboat_scheduler_binds_total", "ok")
	if int(okA+okB) != bound {
		t.Errorf("successful binds %v + %v != %d bound pods: a pod was bound twice", okA, okB, bound)
	}
	t.Logf("scheduler a bound %v, b bound %v; conflicts a %v, b %v", okA, okB,
		counter(t, a.Scheduler, "tugboat_scheduler_binds_total", "conflict"), counter(t, b.Scheduler, "tugboat_scheduler_binds_total", "conflict"))
}

func TestLeaderHandsOverToStandby(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	createNode(t, c, makeNode("node-1", "4", "8Gi"))
	le := Config{LeaderElect: true, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	first, second := le, le
	first.Identity, second.Identity = "first", "second"
	a := startScheduler(t, srv, first)
	leases := client.For[*v1.Lease](c)
	wait.Eventually(t, 20*time.Second, "first to lead", func() error {
		l, err := leases.Get(context.Background(), "kube-system", "scheduler")
		if err == nil && l.Spec.HolderIdentity == "first" {
			return nil
		}
		return fmt.Errorf("lease %v (%v)", l, err)
	})
	b := startScheduler(t, srv, second)
	createPods(t, c, []*v1.Pod{makePod("one", "100m", "")})
	wait.Eventually(t, 20*time.Second, "pod one bound", func() error {
		if getPod(t, c, "one").Spec.NodeName == "" {
			return errors.New("pod one unbound")
		}
		return nil
	})
	if n := counter(t, b.Scheduler, "tugboat_scheduler_binds_total", "ok"); n != 0 {
		t.Fatalf("the standby bound %v pods", n)
	}
	a.stop(t) // the leader dies
	handover := time.Now()
	createPods(t, c, []*v1.Pod{makePod("two", "100m", "")})
	wait.Eventually(t, 20*time.Second, "pod two bound by the standby", func() error {
		if getPod(t, c, "two").Spec.NodeName == "" {
			return errors.New("pod two unbound")
		}
		return nil
	})
	if n := counter(t, b.Scheduler, "tugboat_scheduler_binds_total", "ok"); n != 1 {
		t.Errorf("the standby bound %v pods, want 1", n)
	}
	t.Logf("standby bound the next pod %v after the leader stopped", time.Since(handover).Round(time.Millisecond))
}

// counter reads a counter of the scheduler's registry by label value.
func counter(t *testing.T, s *Scheduler, name, labelValue string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue == "" && len(m.GetLabel()) == 0 {
				return m.GetCounter().GetValue() // a counter without labels
			}
			for _, l := range m.GetLabel() {
				if l.GetValue() == labelValue {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestBindRefusesUnseenBindings checks the apiserver's side of the
// guarantee racing schedulers rely on (v1.BindRequest.observed_revision).
func TestBindRefusesUnseenBindings(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	createNode(t, c, makeNode("n1", "4", "8Gi"))
	createPods(t, c, []*v1.Pod{makePod("p1", "", ""), makePod("p2", "", ""), makePod("p3", "", ""), makePod("p4", "", "")})
	bind := func(pod, binder string, observed int64) (int64, error) {
		a, err := c.Objects().Bind(context.Background(), &v1.BindRequest{Namespace: "default", Name: pod, NodeName: "n1", Binder: binder, ObservedRevision: observed})
		if err != nil {
			return 0, apierrors.FromGRPC(err)
		}
		p := &v1.Pod{}
		if err := a.UnmarshalTo(p); err != nil {
			t.Fatal(err)
		}
		return p.Metadata.ResourceVersion, nil
	}
	r1, err := bind("p1", "a", 1)
	if err != nil {
		t.Fatalf("first binding to the node: %v", err)
	}
	if _, err := bind("p2", "b", r1-1); !apierrors.IsConflict(err) {
		t.Fatalf("b bound although it had not seen a's binding: %v", err)
	}
	r2, err := bind("p2", "b", r1)
	if err != nil {
		t.Fatalf("b, having seen a's binding: %v", err)
	}
	if _, err := bind("p3", "b", r1); err != nil {
		t.Fatalf("b after its own binding: %v", err)
	}
	if _, err := bind("p4", "a", r2-1); !apierrors.IsConflict(err) {
		t.Fatalf("a bound although it had not seen b's bindings: %v", err)
	}
	if _, err := bind("p4", "a", 0); err != nil {
		t.Fatalf("a bind without observed revision (no check): %v", err)
	}
	if _, err := bind("p4", "a", 0); !apierrors.IsConflict(err) {
		t.Fatalf("second bind of a bound pod: %v", err)
	}
}

// TestWorksWithItsRBACRole runs the scheduler with its own certificate
// against an apiserver with TLS and RBAC on: its role must allow every call
// it makes (lease, bind, pod status, events).
func TestWorksWithItsRBACRole(t *testing.T) {
	srv := apiservertest.StartSecure(t)
	admin := srv.Client
	createNode(t, admin, makeNode("n1", "2", "4Gi"))
	startSchedulerWith(t, srv.ClientAs("scheduler"), Config{LeaderElect: true, RetryPeriod: 200 * time.Millisecond})
	createPods(t, admin, []*v1.Pod{makePod("fits", "1", "1Gi"), makePod("too-big", "4", "")})
	wait.Eventually(t, 20*time.Second, "one pod bound, one explained", func() error {
		fits, big := getPod(t, admin, "fits"), getPod(t, admin, "too-big")
		cond := podScheduledCondition(big)
		if fits.Spec.NodeName == "n1" && cond != nil && cond.Reason == "Unschedulable" {
			return nil
		}
		return fmt.Errorf("fits on %q, too-big PodScheduled %v", fits.Spec.NodeName, cond)
	})
	wait.Eventually(t, 20*time.Second, "both events", func() error {
		scheduled, failed := events(t, admin, "fits", "Scheduled"), events(t, admin, "too-big", "FailedScheduling")
		if len(scheduled) == 1 && len(failed) == 1 {
			return nil
		}
		return fmt.Errorf("%d Scheduled events for fits, %d FailedScheduling for too-big; want 1 each", len(scheduled), len(failed))
	})
}

// A ReadWriteOncePod claim is one pod's at a time: a second pod using it
// is unschedulable with Kubernetes' reason until the first is gone.
func TestReadWriteOncePodClaim(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	ctx := t.Context()
	createNode(t, c, makeNode("node-1", "4", "8Gi"))
	if _, err := client.For[*v1.PersistentVolume](c).Create(ctx, &v1.PersistentVolume{Metadata: &v1.ObjectMeta{Name: "pv-solo"},
		Spec: &v1.PersistentVolumeSpec{Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOncePod"},
			StorageClassName: "", HostPath: &v1.HostPathVolumeSource{Path: "/tmp/solo"}}}); err != nil {
		t.Fatal(err)
	}
	pvc, err := client.For[*v1.PersistentVolumeClaim](c).Create(ctx, &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: "solo", Namespace: "default"},
		Spec: &v1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOncePod"}, StorageClassName: proto.String(""), VolumeName: "pv-solo",
			Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}}}})
	if err != nil {
		t.Fatal(err)
	}
	withClaim := func(p *v1.Pod) {
		p.Spec.Volumes = []*v1.Volume{{Name: "data", PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Metadata.Name}}}
	}
	createPods(t, c, []*v1.Pod{makePod("first", "", "", withClaim)})
	startScheduler(t, srv, Config{})
	wait.Eventually(t, 20*time.Second, "first bound", func() error {
		if n := getPod(t, c, "first").GetSpec().GetNodeName(); n == "" {
			return fmt.Errorf("first not bound")
		}
		return nil
	})
	createPods(t, c, []*v1.Pod{makePod("second", "", "", withClaim)})
	const reason = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
	wait.Eventually(t, 20*time.Second, "second unschedulable", func() error {
		if cd := podScheduledCondition(getPod(t, c, "second")); cd == nil || cd.Status != "False" || !strings.Contains(cd.Message, reason) {
			return fmt.Errorf("second: %v", cd)
		}
		return nil
	})
	if _, err := client.For[*v1.Pod](c).Delete(ctx, "default", "first", client.DeleteOptions{GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "second bound once first is gone", func() error {
		if n := getPod(t, c, "second").GetSpec().GetNodeName(); n == "" {
			return fmt.Errorf("second not bound: %v", podScheduledCondition(getPod(t, c, "second")))
		}
		return nil
	})
}
