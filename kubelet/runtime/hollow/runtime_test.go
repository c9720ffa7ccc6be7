package hollow

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

func sandboxConfig(uid string) runtime.SandboxConfig {
	return runtime.SandboxConfig{Pod: runtime.PodRef{Namespace: "default", Name: "p-" + uid, UID: uid}}
}

func TestSandboxAddresses(t *testing.T) {
	ctx := context.Background()
	r := New(Config{})
	if _, err := r.RunPodSandbox(ctx, sandboxConfig("a")); !errors.Is(err, runtime.ErrNetworkSetup) {
		t.Fatalf("sandbox before the pod CIDR: %v, want ErrNetworkSetup", err)
	}
	if err := r.SetPodCIDR(netip.MustParsePrefix("10.244.3.0/29")); err != nil {
		t.Fatal(err)
	}
	// A /29 has 8 addresses: network (.0), gateway (.1) and broadcast (.7)
	// are never handed out, which leaves .2 to .6.
	var ids []string
	for i, want := range []string{"10.244.3.2", "10.244.3.3", "10.244.3.4", "10.244.3.5", "10.244.3.6"} {
		id, err := r.RunPodSandbox(ctx, sandboxConfig(string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.PodSandboxStatus(ctx, id)
		if err != nil || st.IP != want || st.State != runtime.SandboxReady {
			t.Fatalf("sandbox %d: %+v %v, want Ready with IP %s", i, st, err, want)
		}
		ids = append(ids, id)
	}
	if _, err := r.RunPodSandbox(ctx, sandboxConfig("z")); !errors.Is(err, runtime.ErrNetworkSetup) {
		t.Fatalf("sandbox in a full pod CIDR: %v, want ErrNetworkSetup", err)
	}
	host := sandboxConfig("h")
	host.HostNetwork = true
	if id, err := r.RunPodSandbox(ctx, host); err != nil {
		t.Fatalf("host-network sandbox in a full pod CIDR: %v", err)
	} else if st, _ := r.PodSandboxStatus(ctx, id); st.IP != "" {
		t.Fatalf("host-network sandbox got IP %q", st.IP)
	}
	if err := r.StopPodSandbox(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.PodSandboxStatus(ctx, ids[1]); st.IP != "" || st.State != runtime.SandboxNotReady {
		t.Fatalf("stopped sandbox: %+v, want NotReady without IP", st)
	}
	id, err := r.RunPodSandbox(ctx, sandboxConfig("y"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := r.PodSandboxStatus(ctx, id); st.IP != "10.244.3.3" {
		t.Fatalf("sandbox after a release: IP %q, want the released 10.244.3.3", st.IP)
	}
	if err := r.RemovePodSandbox(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PodSandboxStatus(ctx, ids[0]); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("removed sandbox: %v, want ErrNotFound", err)
	}
	if err := r.SetPodCIDR(netip.MustParsePrefix("10.244.3.1/24")); !errors.Is(err, runtime.ErrInvalid) {
		t.Fatalf("SetPodCIDR of a host address: %v, want ErrInvalid", err)
	}
}

func TestContainers(t *testing.T) {
	ctx := context.Background()
	r := New(Config{Images: []runtime.ImageStatus{SimulatedImage("docker.io/library/busybox:latest")}})
	if err := r.SetPodCIDR(netip.MustParsePrefix("10.244.0.0/24")); err != nil {
		t.Fatal(err)
	}
	sb, err := r.RunPodSandbox(ctx, sandboxConfig("u1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		command []string
		state   runtime.ContainerState
		code    int
		reason  string
	}{
		{[]string{"sleep", "3600"}, runtime.ContainerRunning, 0, ""},
		{[]string{"true"}, runtime.ContainerExited, 0, runtime.ReasonCompleted},
		{[]string{"false"}, runtime.ContainerExited, 1, runtime.ReasonError},
		{[]string{"sh", "-c", "exit 3"}, runtime.ContainerExited, 3, runtime.ReasonError},
		{[]string{"sh", "-c", "echo hi; exit 3"}, runtime.ContainerRunning, 0, ""},
	} {
		id, err := r.CreateContainer(ctx, sb, runtime.ContainerConfig{Name: "c", Image: "busybox", Command: tc.command, LogPath: "/nowhere/0.log"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		st, err := r.ContainerStatus(ctx, id)
		if err != nil || st.State != tc.state || st.ExitCode != tc.code || st.Reason != tc.reason {
			t.Errorf("%q: %s exit %d %q (%v), want %s exit %d %q", tc.command, st.State, st.ExitCode, st.Reason, err, tc.state, tc.code, tc.reason)
		}
		if err := r.StartContainer(ctx, id); !errors.Is(err, runtime.ErrInvalid) {
			t.Errorf("%q: second start: %v, want ErrInvalid", tc.command, err)
		}
	}
	running, err := r.ListContainers(ctx, runtime.ContainerFilter{State: runtime.ContainerRunning})
	if err != nil || len(running) != 2 {
		t.Fatalf("running containers: %d (%v), want 2", len(running), err)
	}
	for cmd, want := range map[string]int{"true": 0, "cat /tmp/healthy": 0, "false": 1} {
		code, err := r.Exec(ctx, running[0].ID, runtime.ExecRequest{Cmd: []string{cmd}})
		if err != nil || code != want {
			t.Errorf("exec %q: %d %v, want %d", cmd, code, err, want)
		}
	}
	if err := r.StopContainer(ctx, running[0].ID, 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.ContainerStatus(ctx, running[0].ID); st.State != runtime.ContainerExited || st.ExitCode != KilledExitCode {
		t.Fatalf("stopped container: %s exit %d, want Exited %d", st.State, st.ExitCode, KilledExitCode)
	}
	if _, err := r.Exec(ctx, running[0].ID, runtime.ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, runtime.ErrNotRunning) {
		t.Fatalf("exec in a stopped container: %v, want ErrNotRunning", err)
	}
	if err := r.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.ContainerStatus(ctx, running[1].ID); st.State != runtime.ContainerExited {
		t.Fatalf("container of a stopped sandbox: %s, want Exited", st.State)
	}
	if _, err := r.CreateContainer(ctx, sb, runtime.ContainerConfig{Name: "c", Image: "busybox", LogPath: "/nowhere/1.log"}); !errors.Is(err, runtime.ErrSandboxNotReady) {
		t.Fatalf("container in a stopped sandbox: %v, want ErrSandboxNotReady", err)
	}
}

func TestImages(t *testing.T) {
	ctx := context.Background()
	shared := []runtime.ImageStatus{SimulatedImage("docker.io/library/busybox:latest")}
	a, b := New(Config{Images: shared}), New(Config{Images: shared})
	if _, err := a.ImageStatus(ctx, "busybox"); err != nil {
		t.Fatalf("configured image: %v", err)
	}
	if _, err := a.ImageStatus(ctx, "nginx:1.27"); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Fatalf("image never pulled: %v, want ErrImageNotPresent", err)
	}
	if _, err := a.EnsureImage(ctx, "nginx:1.27", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := a.ImageStatus(ctx, "docker.io/library/nginx:1.27"); err != nil || st.ID == "" {
		t.Fatalf("pulled image: %+v %v", st, err)
	}
	if _, err := b.ImageStatus(ctx, "nginx:1.27"); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Fatalf("another node's pulled image: %v, want ErrImageNotPresent", err)
	}
	if imgs, _ := a.ListImages(ctx); len(imgs) != 2 {
		t.Fatalf("images: %v, want busybox and nginx", imgs)
	}
	if err := a.RemoveImage(ctx, "nginx:1.27"); err != nil {
		t.Fatal(err)
	}
	if err := a.RemoveImage(ctx, "busybox"); err != nil {
		t.Fatal(err)
	}
	if imgs, _ := a.ListImages(ctx); len(imgs) != 1 || imgs[0].Ref != "docker.io/library/busybox:latest" {
		t.Fatalf("images after removals: %v, want busybox only (every node's)", imgs)
	}
	if _, err := a.EnsureImage(ctx, "Not A Ref", nil); !errors.Is(err, runtime.ErrInvalid) {
		t.Fatalf("bad reference: %v, want ErrInvalid", err)
	}
	if _, err := a.ImportImage(ctx, nil); !errors.Is(err, runtime.ErrInvalid) {
		t.Fatalf("import: %v, want ErrInvalid", err)
	}
}
