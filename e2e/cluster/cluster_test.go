package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/e2e/netlab"
)

var bins *cluster.Binaries

const helperEnv = "TUGBOAT_CLUSTER_TEST_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelper(dir))
	}
	os.Exit(cluster.TestMain(m, &bins))
}

// runHelper starts a cluster with a running pod, prints "ready <run id>"
// and waits to be killed: a test run killed mid-way.
func runHelper(binDir string) int {
	ctx := context.Background()
	b, err := cluster.LoadBinaries(binDir)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	c, err := cluster.New(ctx, cluster.Options{Binaries: b, NoScheduler: true, NoControllerManager: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	pod := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "left", Namespace: "default"},
		Spec: &v1.PodSpec{NodeName: "node1", TerminationGracePeriodSeconds: proto.Int64(1),
			Containers: []*v1.Container{{Name: "main", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent", Command: []string{"sleep", "3600"}}}},
	}
	if _, err := client.For[*v1.Pod](c.Client).Create(ctx, pod); err != nil {
		fmt.Println("error", err)
		return 1
	}
	// The test that runs this helper gives it two minutes.
	err = wait.Until(ctx, 2*time.Minute, func(ctx context.Context) error {
		p, err := client.For[*v1.Pod](c.Client).Get(ctx, "default", "left")
		if err != nil {
			return err
		}
		if p.GetStatus().GetPhase() != "Running" {
			return fmt.Errorf("pod left is %s", p.GetStatus().GetPhase())
		}
		return nil
	})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready", c.ID)
	select {}
}

// TestClusterUpAndDown starts a two-node cluster and checks both nodes
// are Ready with their own pod CIDRs.
func TestClusterUpAndDown(t *testing.T) {
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitNodesReady(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Nodes[0].PodCIDR == c.Nodes[1].PodCIDR || !c.ClusterCIDR.Contains(c.Nodes[1].PodCIDR.Addr()) {
		t.Errorf("pod CIDRs %s %s in %s", c.Nodes[0].PodCIDR, c.Nodes[1].PodCIDR, c.ClusterCIDR)
	}
	for _, n := range c.Nodes {
		node, err := client.For[*v1.Node](c.Client).Get(ctx, "", n.Name)
		if err != nil {
			t.Fatal(err)
		}
		if node.Spec.PodCidr != n.PodCIDR.String() || node.Status.Addresses[0].Address != n.IP.String() {
			t.Errorf("%s: spec %v addresses %v", n.Name, node.Spec, node.Status.Addresses)
		}
	}
}

// TestCleanupAfterKilledRun kills a process that runs a cluster with a pod
// (as a killed `go test` would be), then checks that the stale cleanup
// removes its processes (shim and container), mounts, run directory,
// cgroups and namespaces.
func TestCleanupAfterKilledRun(t *testing.T) {
	if err := cluster.Check(); err != nil || bins == nil {
		cluster.NewForTest(t, cluster.Options{Binaries: bins}) // skips (or fails in CI) with the reason
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+bins.Dir)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "ready ") || strings.HasPrefix(s.Text(), "error ") {
				lines <- s.Text()
			}
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	var id string
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "ready ") {
			_ = cmd.Process.Kill()
			t.Fatalf("helper: %s", l)
		}
		id = strings.TrimPrefix(l, "ready ")
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("helper not ready")
	}
	dir := filepath.Join(cluster.DefaultBaseDir, id)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("run dir: %v", err)
	}
	if left := leftovers(id, dir); len(left) == 0 {
		t.Fatal("the helper's run left nothing to find: the check looks in the wrong places")
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()

	ctx := context.Background()
	removed, err := cluster.CleanupStale(ctx, cluster.DefaultBaseDir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !contains(removed, id) {
		t.Errorf("CleanupStale removed %v, not %s", removed, id)
	}
	if _, err := netlab.CleanupStale(ctx, netlab.DefaultPrefix, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "nothing left of the killed run", func() error {
		if left := leftovers(id, dir); len(left) > 0 {
			return fmt.Errorf("left behind:\n%s", strings.Join(left, "\n"))
		}
		return nil
	})
}

// leftovers lists what a run left: its directory, processes that use it
// (shims), processes in its cgroups (containers), mounts under it, its
// network namespaces.
func leftovers(id, dir string) []string {
	var out []string
	if _, err := os.Stat(dir); err == nil {
		out = append(out, "dir "+dir)
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmdline, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if strings.Contains(string(cmdline), dir+"/") {
			out = append(out, "process "+p.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
		cg, _ := os.ReadFile("/proc/" + p.Name() + "/cgroup")
		if strings.Contains(string(cg), "/tugboat-e2e/"+id+"/") {
			out = append(out, "process in the run's cgroup "+p.Name())
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(mi), "\n") {
		if strings.Contains(l, " "+dir+"/") {
			out = append(out, "mount "+l)
		}
	}
	nss, _ := os.ReadDir("/run/netns")
	for _, n := range nss {
		if strings.HasPrefix(n.Name(), id+"-") {
			out = append(out, "netns "+n.Name())
		}
	}
	cgs, _ := filepath.Glob("/sys/fs/cgroup/*/tugboat-e2e/" + id)
	for _, c := range cgs {
		out = append(out, "cgroup "+c)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
