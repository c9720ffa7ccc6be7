// Package controllertest holds what controller tests share: a fake cluster
// (nodes whose fake kubelets renew their leases, run bound pods to
// Running/Ready and finish graceful deletions, plus a tiny scheduler that
// binds pending pods), a source wrapper that delays a watch, and polling
// helpers. Everything runs against a real apiserver (apiservertest).
package controllertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// ClusterOptions shape a fake cluster.
type ClusterOptions struct {
	// Nodes are created (with leases) at start.
	Nodes []string
	// LeaseRenew is how often each live kubelet renews its lease (default 200ms).
	LeaseRenew time.Duration
	// ReadyDelay is how long a bound pod takes to become Running/Ready (default 50ms).
	ReadyDelay time.Duration
	// NeverReady, if set, picks pods that run but never become Ready.
	NeverReady func(*v1.Pod) bool
	// Usage, if set, is each running pod's cpu (millicores) and memory
	// (bytes) use: every node then serves NodeAPI.Stats with it through a
	// tunnel to the apiserver, as a kubelet does (for the autoscaler).
	Usage func(*v1.Pod) (cpuMilli, memoryBytes int64)
	// NoScheduler leaves binding to a scheduler the test runs (the real
	// one, for tests of node affinity and daemon placement).
	NoScheduler bool
	// Exit, if set, says how a running pod ends: ok false keeps it
	// running; otherwise, ReadyDelay after it started, every container
	// terminates with code and the pod becomes Succeeded (code 0) or
	// Failed, as a kubelet reports a pod with restartPolicy Never or
	// OnFailure whose containers exited (batch workloads).
	Exit func(*v1.Pod) (code int32, ok bool)
}

// Cluster is a set of fake nodes and a fake scheduler.
type Cluster struct {
	t    testing.TB
	c    *client.Client
	opts ClusterOptions

	pods  controller.Source[*v1.Pod]
	nodes controller.Source[*v1.Node]
	loop  *controller.Controller

	ctx context.Context // the cluster's, for the nodes' stats tunnels
	wg  *sync.WaitGroup

	mu   sync.Mutex
	dead map[string]bool
	next int
}

// Logger is the logger tests hand to controllers: silent unless
// TUGBOAT_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("TUGBOAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// StartCluster creates the nodes and runs their kubelets and the scheduler
// until the test ends.
func StartCluster(t testing.TB, c *client.Client, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.LeaseRenew == 0 {
		opts.LeaseRenew = 200 * time.Millisecond
	}
	if opts.ReadyDelay == 0 {
		opts.ReadyDelay = 50 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := controller.NewInformers(c, 0, Logger())
	cl := &Cluster{t: t, c: c, opts: opts, dead: map[string]bool{},
		pods: controller.For[*v1.Pod](f), nodes: controller.For[*v1.Node](f)}
	cl.loop = controller.New(controller.Config{Name: "fake-cluster", Workers: 4, Sync: cl.sync, Logger: Logger(),
		Synced: []func() bool{f.HasSynced}})
	enqueue := func(p *v1.Pod) { cl.loop.EnqueueObject(p) }
	cl.pods.AddHandler(informer.Handler[*v1.Pod]{OnAdd: enqueue, OnUpdate: func(_, p *v1.Pod) { enqueue(p) }})
	nodeChanged := func(n *v1.Node) {
		if schedulable(n) {
			cl.requeuePods(func(p *v1.Pod) bool { return p.GetSpec().GetNodeName() == "" })
		}
	}
	cl.nodes.AddHandler(informer.Handler[*v1.Node]{OnAdd: nodeChanged, OnUpdate: func(_, n *v1.Node) { nodeChanged(n) }})
	var wg sync.WaitGroup
	cl.ctx, cl.wg = ctx, &wg
	for _, n := range opts.Nodes {
		cl.AddNode(ctx, n)
	}
	wg.Add(3)
	go func() { defer wg.Done(); _ = f.Run(ctx) }()
	go func() { defer wg.Done(); _ = cl.loop.Run(ctx) }()
	go func() { defer wg.Done(); cl.heartbeats(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return cl
}

// AddNode registers a Ready node and its lease.
func (cl *Cluster) AddNode(ctx context.Context, name string) {
	cl.t.Helper()
	nodes := client.For[*v1.Node](cl.c)
	n, err := nodes.Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		cl.t.Fatalf("creating node %s: %v", name, err)
	}
	if err == nil {
		n.Status = &v1.NodeStatus{
			Capacity:    map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110"},
			Allocatable: map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110"},
			Conditions:  []*v1.Condition{readyCondition()},
		}
		if _, err := nodes.UpdateStatus(ctx, n); err != nil {
			cl.t.Fatalf("node %s status: %v", name, err)
		}
	}
	cl.renew(ctx, name)
	if cl.opts.Usage != nil && err == nil {
		cl.serveStats(cl.ctx, cl.wg, name)
	}
}

func readyCondition() *v1.Condition {
	now := timestamppb.Now()
	return &v1.Condition{Type: "Ready", Status: "True", Reason: "KubeletReady", Message: "kubelet is posting ready status",
		LastHeartbeatTime: now, LastTransitionTime: now}
}

// StopNode makes a node's kubelet go silent: no lease renewals, no pod
// status, no finished deletions (a crashed or unreachable machine).
func (cl *Cluster) StopNode(name string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.dead[name] = true
}

// StartNode brings a stopped node's kubelet back.
func (cl *Cluster) StartNode(name string) {
	cl.mu.Lock()
	cl.dead[name] = false
	cl.mu.Unlock()
	cl.requeuePods(func(p *v1.Pod) bool { return p.GetSpec().GetNodeName() == name })
}

func (cl *Cluster) alive(name string) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return !cl.dead[name]
}

func (cl *Cluster) heartbeats(ctx context.Context) {
	t := time.NewTicker(cl.opts.LeaseRenew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, n := range cl.nodes.List() {
			name := n.GetMetadata().GetName()
			if !cl.alive(name) {
				continue
			}
			cl.renew(ctx, name)
			// Like the real kubelet: re-post Ready when the stored status
			// says otherwise (the node lifecycle controller set Unknown).
			if c := controller.GetCondition(n.GetStatus().GetConditions(), "Ready"); c != nil && c.Status != "True" {
				_, _ = client.For[*v1.Node](cl.c).Mutate(ctx, "", name, true, func(n *v1.Node) error {
					controller.SetCondition(&n.Status.Conditions, readyCondition(), time.Now())
					return nil
				})
			}
		}
	}
}

func (cl *Cluster) renew(ctx context.Context, name string) {
	leases := client.For[*v1.Lease](cl.c)
	now := timestamppb.Now()
	_, err := leases.Mutate(ctx, "kube-node-lease", name, false, func(l *v1.Lease) error {
		l.Spec = &v1.LeaseSpec{HolderIdentity: name, LeaseDurationSeconds: 40, RenewTime: now}
		return nil
	})
	if apierrors.IsNotFound(err) {
		_, _ = leases.Create(ctx, &v1.Lease{Metadata: &v1.ObjectMeta{Name: name, Namespace: "kube-node-lease"},
			Spec: &v1.LeaseSpec{HolderIdentity: name, LeaseDurationSeconds: 40, RenewTime: now}})
	}
}

func (cl *Cluster) requeuePods(match func(*v1.Pod) bool) {
	for _, p := range cl.pods.List() {
		if match(p) {
			cl.loop.EnqueueObject(p)
		}
	}
}

// schedulable reports whether the fake scheduler may bind to n.
func schedulable(n *v1.Node) bool {
	c := controller.GetCondition(n.GetStatus().GetConditions(), "Ready")
	if c == nil || c.Status != "True" || n.GetSpec().GetUnschedulable() {
		return false
	}
	for _, t := range n.GetSpec().GetTaints() {
		if t.Effect == "NoSchedule" || t.Effect == "NoExecute" {
			return false
		}
	}
	return true
}

func (cl *Cluster) pickNode() string {
	var names []string
	for _, n := range cl.nodes.List() {
		if schedulable(n) && cl.alive(n.GetMetadata().GetName()) {
			names = append(names, n.GetMetadata().GetName())
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.next++
	return names[cl.next%len(names)] // round robin: pods spread evenly

}

// sync is the fake scheduler and the fake kubelets for one pod.
func (cl *Cluster) sync(ctx context.Context, key string) error {
	p, ok := cl.pods.Get(key)
	if !ok {
		return nil
	}
	m := p.GetMetadata()
	node := p.GetSpec().GetNodeName()
	switch {
	case node == "":
		if m.GetDeletionTimestamp() != nil || cl.opts.NoScheduler {
			return nil
		}
		target := cl.pickNode()
		if target == "" {
			return nil // requeued when a node changes
		}
		_, err := cl.c.Bind(ctx, m.Namespace, m.Name, target, 0)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	case !cl.alive(node):
		return nil
	case m.GetDeletionTimestamp() != nil:
		_, err := client.For[*v1.Pod](cl.c).Delete(ctx, m.Namespace, m.Name, client.DeleteOptions{GracePeriodSeconds: new(int64)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	case p.GetStatus().GetPhase() == "Running" && !controller.IsPodReady(p) && (cl.opts.NeverReady == nil || !cl.opts.NeverReady(p)):
		// Someone (the node lifecycle controller) marked it not ready while
		// the node was away: a live kubelet reports the truth again.
		_, err := client.For[*v1.Pod](cl.c).Mutate(ctx, m.Namespace, m.Name, true, func(p *v1.Pod) error {
			if p.Spec.NodeName == node && p.Metadata.DeletionTimestamp == nil {
				runPod(p, true)
			}
			return nil
		})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	case p.GetStatus().GetPhase() == "Running" && cl.opts.Exit != nil:
		code, ok := cl.opts.Exit(p)
		if !ok {
			return nil
		}
		if age := time.Since(p.GetStatus().GetStartTime().AsTime()); age < cl.opts.ReadyDelay {
			cl.loop.EnqueueAfter(key, cl.opts.ReadyDelay-age)
			return nil
		}
		_, err := client.For[*v1.Pod](cl.c).Mutate(ctx, m.Namespace, m.Name, true, func(p *v1.Pod) error {
			if p.Spec.NodeName == node && p.Status.Phase == "Running" {
				exitPod(p, code)
			}
			return nil
		})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	case p.GetStatus().GetPhase() == "Pending":
		age := time.Since(controller.GetCondition(p.GetStatus().GetConditions(), "PodScheduled").GetLastTransitionTime().AsTime())
		if age < cl.opts.ReadyDelay {
			cl.loop.EnqueueAfter(key, cl.opts.ReadyDelay-age)
			return nil
		}
		ready := cl.opts.NeverReady == nil || !cl.opts.NeverReady(p)
		_, err := client.For[*v1.Pod](cl.c).Mutate(ctx, m.Namespace, m.Name, true, func(p *v1.Pod) error {
			if p.Spec.NodeName != node || p.Metadata.DeletionTimestamp != nil {
				return nil
			}
			runPod(p, ready)
			return nil
		})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	return nil
}

// podIPs numbers the fake pod IPs, so every pod gets its own (10.244.0.2,
// 10.244.0.3, ...: up to 250 per /24), as host-local IPAM gives them.
var podIPs atomic.Uint32

// runPod sets the status a kubelet reports for a started pod.
func runPod(p *v1.Pod, ready bool) {
	now := time.Now()
	st := p.Status
	st.Phase = "Running"
	st.StartTime = timestamppb.New(now)
	st.HostIp = "10.0.0.1"
	if st.PodIp == "" {
		n := podIPs.Add(1) - 1
		st.PodIp = fmt.Sprintf("10.244.%d.%d", n/250%256, n%250+2)
	}
	readyS := "False"
	if ready {
		readyS = "True"
	}
	for _, c := range []*v1.Condition{
		{Type: "Initialized", Status: "True"},
		{Type: "ContainersReady", Status: readyS},
		{Type: "Ready", Status: readyS},
	} {
		controller.SetCondition(&st.Conditions, c, now)
	}
}

// exitPod sets the status a kubelet reports for a pod whose containers all
// exited with code and will not be restarted.
func exitPod(p *v1.Pod, code int32) {
	now := timestamppb.Now()
	st := p.Status
	st.Phase, st.Reason = "Succeeded", "Completed"
	if code != 0 {
		st.Phase, st.Reason = "Failed", "Error"
	}
	st.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, &v1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: st.Reason,
				StartedAt: st.StartTime, FinishedAt: now}}})
	}
	for _, c := range []*v1.Condition{{Type: "ContainersReady", Status: "False", Reason: "PodCompleted"}, {Type: "Ready", Status: "False", Reason: "PodCompleted"}} {
		controller.SetCondition(&st.Conditions, c, now.AsTime())
	}
}
