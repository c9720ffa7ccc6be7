package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func testLogger() *slog.Logger {
	if os.Getenv("TUGBOAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// running is a scheduler started by a test.
type running struct {
	*Scheduler
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned, with err set
	err    error
}

// stop cancels the scheduler and waits for Run to return.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("scheduler Run: %v", r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("scheduler did not stop within 30s of cancel")
	}
}

// startScheduler runs a scheduler with its own connection, as a separate
// process would have. Fast retries keep tests short.
func startScheduler(t *testing.T, srv *apiservertest.Server, cfg Config) *running {
	t.Helper()
	c, err := client.New(client.Config{Server: srv.Addr(), UserAgent: "scheduler-test"})
	if err != nil {
		t.Fatal(err)
	}
	return startSchedulerWith(t, c, cfg)
}

// startSchedulerWith runs a scheduler on connection c.
func startSchedulerWith(t *testing.T, c *client.Client, cfg Config) *running {
	t.Helper()
	if cfg.InitialBackoff == 0 {
		cfg.InitialBackoff = 50 * time.Millisecond
		cfg.MaxBackoff = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	s, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Scheduler: s, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = s.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
		c.Close()
	})
	return r
}

// eventually polls cond until it holds or the timeout passes.
type nodeOpt func(*v1.Node)

func makeNode(name, cpu, mem string, opts ...nodeOpt) *v1.Node {
	n := &v1.Node{
		Metadata: &v1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:     &v1.NodeSpec{},
		Status: &v1.NodeStatus{
			Capacity:    map[string]string{"cpu": cpu, "memory": mem, "pods": "110"},
			Allocatable: map[string]string{"cpu": cpu, "memory": mem, "pods": "110"},
			Conditions:  []*v1.Condition{{Type: "Ready", Status: "True"}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func label(k, v string) nodeOpt { return func(n *v1.Node) { n.Metadata.Labels[k] = v } }

func taint(k, v, effect string) nodeOpt {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, &v1.Taint{Key: k, Value: v, Effect: effect}) }
}

// createNode stores a node with its status, as a kubelet registering
// would.
func createNode(t *testing.T, c *client.Client, n *v1.Node) {
	t.Helper()
	ctx := context.Background()
	nodes := client.For[*v1.Node](c)
	out, err := nodes.Create(ctx, n)
	if err != nil {
		t.Fatalf("create node %s: %v", n.Metadata.Name, err)
	}
	if proto.Equal(out.Status, n.Status) {
		return
	}
	out.Status = n.Status
	if _, err := nodes.UpdateStatus(ctx, out); err != nil {
		t.Fatalf("node %s status: %v", n.Metadata.Name, err)
	}
}

type podOpt func(*v1.Pod)

func makePod(name, cpu, mem string, opts ...podOpt) *v1.Pod {
	req := map[string]string{}
	if cpu != "" {
		req["cpu"] = cpu
	}
	if mem != "" {
		req["memory"] = mem
	}
	p := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{
			Name: "app", Image: "busybox:1.36", Resources: &v1.ResourceRequirements{Requests: req},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func nodeSelector(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func toleration(k, v string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, &v1.Toleration{Key: k, Operator: "Equal", Value: v, Effect: "NoSchedule"})
	}
}

// allowHostPorts labels the default namespace for Pod Security
// privileged, as an admin opens a namespace for pods with hostPorts (the
// cluster default, baseline, refuses them).
func allowHostPorts(t *testing.T, c *client.Client) {
	t.Helper()
	if _, err := client.For[*v1.Namespace](c).Mutate(context.Background(), "", "default", false, func(ns *v1.Namespace) error {
		if ns.Metadata.Labels == nil {
			ns.Metadata.Labels = map[string]string{}
		}
		ns.Metadata.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func hostPortOpt(port int32) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = []*v1.ContainerPort{{ContainerPort: 80, HostPort: port}}
	}
}

// createPods creates pods with a few concurrent writers.
func createPods(t *testing.T, c *client.Client, pods []*v1.Pod) {
	t.Helper()
	api := client.For[*v1.Pod](c)
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	ch := make(chan *v1.Pod)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range ch {
				if _, err := api.Create(context.Background(), p); err != nil {
					errs <- fmt.Errorf("create pod %s: %w", p.Metadata.Name, err)
				}
			}
		}()
	}
	for _, p := range pods {
		ch <- p
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func listPods(t *testing.T, c *client.Client) []*v1.Pod {
	t.Helper()
	pods, _, err := client.For[*v1.Pod](c).List(context.Background(), client.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

func getPod(t *testing.T, c *client.Client, name string) *v1.Pod {
	t.Helper()
	p, err := client.For[*v1.Pod](c).Get(context.Background(), "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// podScheduledCondition is the pod's PodScheduled condition, or nil.
func podScheduledCondition(p *v1.Pod) *v1.Condition {
	for _, c := range p.GetStatus().GetConditions() {
		if c.Type == "PodScheduled" {
			return c
		}
	}
	return nil
}

// settled reports whether every pod is bound or marked unschedulable.
func settled(pods []*v1.Pod) error {
	bound, unsched, waiting := 0, 0, 0
	for _, p := range pods {
		switch c := podScheduledCondition(p); {
		case p.Spec.NodeName != "":
			bound++
		case c != nil && c.Status == "False":
			unsched++
		default:
			waiting++
		}
	}
	if waiting > 0 {
		return fmt.Errorf("%d bound, %d unschedulable, %d waiting", bound, unsched, waiting)
	}
	return nil
}

func events(t *testing.T, c *client.Client, pod, reason string) []*v1.Event {
	t.Helper()
	list, _, err := client.For[*v1.Event](c).List(context.Background(), client.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.Event
	for _, e := range list {
		if e.InvolvedObject.GetName() == pod && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
