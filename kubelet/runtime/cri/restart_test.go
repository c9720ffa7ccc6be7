package cri

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestAdoptionAndContainerdRestart: a new Runtime (a restarted kubelet)
// finds the same sandbox and containers with their configs; a restarted
// containerd keeps them running with the same IDs.
func TestAdoptionAndContainerdRestart(t *testing.T) {
	require(t)
	ctx := context.Background()
	cfg := sandboxConfig(t, "adopt")
	p := runPod(t, cfg)
	id := p.container(t, "main", "sleep 300")
	waitState(t, id, runtime.ContainerRunning)

	fresh, err := New(Config{Endpoint: testContainerd.CRIEndpoint, CgroupParent: cgroupParent}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	sbs, err := fresh.ListPodSandbox(ctx, runtime.SandboxFilter{PodUID: cfg.Pod.UID})
	if err != nil || len(sbs) != 1 || sbs[0].ID != p.ID || sbs[0].Config.EtcFiles != cfg.EtcFiles || sbs[0].State != runtime.SandboxReady {
		t.Fatalf("a fresh runtime lists %+v (err %v), want sandbox %s as made", sbs, err, p.ID)
	}
	cs, err := fresh.ListContainers(ctx, runtime.ContainerFilter{PodUID: cfg.Pod.UID})
	if err != nil || len(cs) != 1 || cs[0].ID != id || cs[0].State != runtime.ContainerRunning || cs[0].StartedAt.IsZero() {
		t.Fatalf("a fresh runtime lists %+v (err %v), want container %s running", cs, err, id)
	}
	// The fresh runtime rebuilds the sandbox's CRI config to create in it.
	id2 := createIn(t, fresh, p, "second")
	if err := fresh.StartContainer(ctx, id2); err != nil {
		t.Fatal(err)
	}

	pids := testContainerd.ShimPIDs()
	if err := testContainerd.Restart(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the runtime answering after its restart", func() bool {
		_, err := testRuntime.Version(ctx)
		return err == nil
	})
	if len(pids) == 0 {
		t.Error("no shims before the restart")
	}
	for _, c := range []string{id, id2} {
		if st, err := testRuntime.ContainerStatus(ctx, c); err != nil || st.State != runtime.ContainerRunning {
			t.Errorf("container %s after a containerd restart: %+v, %v; want it still running", c, st, err)
		}
	}
	if st, err := testRuntime.PodSandboxStatus(ctx, p.ID); err != nil || st.State != runtime.SandboxReady || st.IP != p.IP.String() {
		t.Errorf("sandbox after a containerd restart: %+v, %v", st, err)
	}
	if err := waitNetworkReady(ctx); err != nil {
		t.Fatal(err)
	}
}

func createIn(t *testing.T, rt *Runtime, p *pod, name string) string {
	t.Helper()
	cfg := runtimeConfig(p, name, "sleep 300")
	id, err := rt.CreateContainer(context.Background(), p.ID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// waitFor polls cond for up to 20s (wait.Eventually, for a yes-or-no
// condition).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	wait.Eventually(t, 20*time.Second, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}
