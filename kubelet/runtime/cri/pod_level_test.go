package cri

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// cgroupValue reads a file of the pod cgroup parent: the v2 name in the
// unified tree, else the v1 one in its hierarchy.
func cgroupValue(t *testing.T, parent, v2, v1Dir, v1 string) string {
	t.Helper()
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", parent, v2))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", v1Dir, parent, v1))
	if len(matches) == 0 {
		t.Fatalf("no %s under the %s hierarchy for %s", v1, v1Dir, parent)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestPodLevelResourcesSandbox: the pod-level limits are on the sandbox's
// cgroup parent, which its containers run under.
func TestPodLevelResourcesSandbox(t *testing.T) {
	require(t)
	cfg := sandboxConfig(t, "podlevel")
	cfg.Resources = &runtime.PodResources{CPUQuota: 20000, CPUPeriod: 100000, CPUShares: 204, MemoryLimit: 64 << 20}
	p := runPod(t, cfg)
	st, err := testRuntime.PodSandboxStatus(context.Background(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	parent := st.Config.CgroupParent
	if got := cgroupValue(t, parent, "memory.max", "memory", "memory.limit_in_bytes"); got != "67108864" {
		t.Errorf("memory limit %s, want 67108864", got)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if got := cgroupValue(t, parent, "cpu.max", "", ""); got != "20000 100000" {
			t.Errorf("cpu.max %q, want 20000 100000", got)
		}
	} else if got := cgroupValue(t, parent, "", "cpu*", "cpu.cfs_quota_us"); got != "20000" {
		t.Errorf("cpu.cfs_quota_us %s, want 20000", got)
	}
}

// TestUserNamespaceSandbox: a sandbox in its own user namespace runs
// where the runtime reports user namespace support (containerd 2.x), and
// is refused with Kubernetes' message where it does not (containerd 1.6),
// leaving no sandbox behind.
func TestUserNamespaceSandbox(t *testing.T) {
	require(t)
	ctx := context.Background()
	cfg := sandboxConfig(t, "userns")
	m := []runtime.IDMapping{{HostID: 65536, ContainerID: 0, Length: 65536}}
	cfg.UserNamespace = &runtime.UserNamespace{UIDs: m, GIDs: m}
	if testRuntime.checkUserNamespaces(ctx) == nil {
		p := runPod(t, cfg)
		id := p.container(t, "main", "cat /proc/self/uid_map /proc/self/gid_map")
		st := waitState(t, id, runtime.ContainerExited)
		b, err := os.ReadFile(st.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		var maps []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(l); len(f) == 6 {
				maps = append(maps, strings.Join(f[3:], " "))
			}
		}
		if st.ExitCode != 0 || len(maps) != 2 || maps[0] != "0 65536 65536" || maps[1] != "0 65536 65536" {
			t.Errorf("exit %d, uid and gid maps %q, want 0 65536 65536 twice", st.ExitCode, maps)
		}
		return
	}
	_, err := testRuntime.RunPodSandbox(ctx, cfg)
	if !errors.Is(err, runtime.ErrUserNamespacesUnsupported) || err.Error() != `RuntimeClass handler "" does not support user namespaces` {
		t.Fatalf("RunPodSandbox: %v, want Kubernetes' refusal", err)
	}
	if list, _ := testRuntime.ListPodSandbox(ctx, runtime.SandboxFilter{Labels: map[string]string{"app": "userns"}}); len(list) != 0 {
		t.Errorf("the refused sandbox was left: %+v", list)
	}
}
