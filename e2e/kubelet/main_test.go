package kubelet_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// The kubelet's integration tests run the real binaries (apiserver with
// etcd, kubelets) on real containerd, runc and CNI plugins in a test
// cluster (e2e/cluster). Tests that do not disturb their node share one
// two-node cluster; the others make their own.

var bins *cluster.Binaries

var shared struct {
	once sync.Once
	c    *cluster.Cluster
	err  error
}

func TestMain(m *testing.M) {
	code := cluster.TestMain(m, &bins)
	if shared.c != nil {
		if err := shared.c.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the shared cluster:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sharedCluster returns the package's two-node cluster, starting it on
// first use.
func sharedCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	if err := cluster.Check(); err != nil || bins == nil {
		// NewForTest skips (or fails in CI) with the reason.
		return cluster.NewForTest(t, cluster.Options{Binaries: bins})
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		dir, err := os.MkdirTemp("", "tugboat-kubelet-test-logs")
		if err != nil {
			shared.err = err
			return
		}
		shared.c, shared.err = cluster.New(ctx, cluster.Options{Binaries: bins, Nodes: 2, LogDir: dir, Images: []string{"busybox", "echo"}})
	})
	if shared.err != nil {
		t.Fatalf("shared cluster: %v", shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range shared.c.Nodes {
				t.Logf("kubelet log of %s: %s", n.Name, n.LogPath)
			}
		}
	})
	return shared.c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// busyboxPod is a pod of one busybox container running sh -c script on
// node, in namespace ns.
func busyboxPod(ns, name, node, script string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"test": name}},
		Spec: &v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: proto.Int64(1),
			Containers: []*v1.Container{{
				Name:            "main",
				Image:           images.BusyboxRef,
				ImagePullPolicy: "IfNotPresent",
				Command:         []string{"sh", "-c", script},
			}},
		},
	}
}

func ensureNamespace(t *testing.T, c *client.Client, ns string) {
	t.Helper()
	_, err := client.For[*v1.Namespace](c).Create(context.Background(), &v1.Namespace{Metadata: &v1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// openNamespace makes ns one whose pods may use the host (hostPath,
// hostNetwork...): labelled pod-security.kubernetes.io/enforce=privileged,
// as an admin opens a namespace (the cluster default, baseline, refuses
// such pods).
func openNamespace(t *testing.T, c *client.Client, ns string) {
	t.Helper()
	_, err := client.For[*v1.Namespace](c).Create(context.Background(), &v1.Namespace{Metadata: &v1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, c *client.Client, pod *v1.Pod) *v1.Pod {
	t.Helper()
	ensureNamespace(t, c, pod.Metadata.Namespace)
	out, err := client.For[*v1.Pod](c).Create(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitPod polls the pod until cond holds, failing the test at the deadline
// with the pod's last status.
func waitPod(t *testing.T, c *client.Client, ns, name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	wait.Eventually(t, timeout, fmt.Sprintf("pod %s/%s %s", ns, name, what), func() error {
		p, err := client.For[*v1.Pod](c).Get(context.Background(), ns, name)
		if err != nil {
			return fmt.Errorf("%w; last status: %v", err, last.GetStatus())
		}
		last = p
		if !cond(p) {
			return fmt.Errorf("last status: %v", p.GetStatus())
		}
		return nil
	})
	return last
}

func waitGone(t *testing.T, c *client.Client, ns, name string, timeout time.Duration) {
	t.Helper()
	wait.Eventually(t, timeout, fmt.Sprintf("pod %s/%s gone", ns, name), func() error {
		_, err := client.For[*v1.Pod](c).Get(context.Background(), ns, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return errors.New("still there")
		}
		return err
	})
}

func running(p *v1.Pod) bool {
	if p.GetStatus().GetPhase() != "Running" {
		return false
	}
	for _, cs := range p.GetStatus().GetContainerStatuses() {
		if cs.GetState().GetRunning() == nil {
			return false
		}
	}
	return true
}

func condition(p *v1.Pod, typ string) *v1.Condition {
	for _, c := range p.GetStatus().GetConditions() {
		if c.Type == typ {
			return c
		}
	}
	return nil
}

func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for _, cs := range p.GetStatus().GetContainerStatuses() {
		if cs.Name == name {
			return cs
		}
	}
	return nil
}

// podEvents lists the reasons and messages of the pod's events.
func podEvents(t *testing.T, c *client.Client, ns, name string) []string {
	t.Helper()
	evs, _, err := client.For[*v1.Event](c).List(context.Background(), client.ListOptions{Namespace: ns, FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// waitEvent waits for an event of the pod whose "reason: message"
// contains want.
func waitEvent(t *testing.T, c *client.Client, ns, name, want string, timeout time.Duration) {
	t.Helper()
	wait.Eventually(t, timeout, fmt.Sprintf("event %q for pod %s/%s", want, ns, name), func() error {
		evs := podEvents(t, c, ns, name)
		for _, e := range evs {
			if strings.Contains(e, want) {
				return nil
			}
		}
		return fmt.Errorf("events: %q", evs)
	})
}

// execIn runs cmd in the pod's container through the apiserver (the
// kubelet's tunnel) and returns stdout+stderr and the exit code.
func execIn(t *testing.T, c *client.Client, ns, pod string, cmd ...string) (string, int32) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	st, err := v1.NewNodeAPIClient(c.Conn()).Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&v1.ExecInput{Start: &v1.ExecStart{Namespace: ns, Pod: pod, Command: cmd}}); err != nil {
		t.Fatal(err)
	}
	_ = st.CloseSend()
	var out strings.Builder
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatalf("exec %v: stream ended without an exit code; output %q", cmd, out.String())
		}
		if err != nil {
			t.Fatalf("exec %v in %s/%s: %v", cmd, ns, pod, err)
		}
		out.Write(m.Stdout)
		out.Write(m.Stderr)
		if m.Exited {
			return out.String(), m.ExitCode
		}
	}
}
