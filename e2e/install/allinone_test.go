package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestAllInOne runs `tugboat up` in one lab host (its kubelet over CRI to
// a containerd of its own, the pause image from --import-images), runs
// the quick-start workload on it, sends requests through an Ingress on the
// node's port 80, and stops it with SIGTERM.
func TestAllInOne(t *testing.T) {
	r := newRun(t, 1)
	h := r.lab.Hosts[0]
	data := filepath.Join(r.dir, "aio")
	start := time.Now()
	p, err := h.Start(r.ctx, exec.Command(filepath.Join(built.binDir, "tugboat"), "up",
		"--data-dir", data,
		"--listen", h.IP.String()+":6443",
		"--node-name", "aio",
		"--node-ip", h.IP.String(),
		"--cgroup-root", r.cgroupRoot("aio"),
		"--cni-conf-dir", filepath.Join(data, "cni"),
		"--import-images", built.imagesDir,
		"--no-user-config"))
	if err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(data, "admin.config")
	waitReadyNodes(t, r.ctx, admin, 1, func() error {
		if p.Exited() {
			return fmt.Errorf("tugboat up exited; see %s", p.LogPath())
		}
		return nil
	})
	t.Logf("tugboat up: node Ready %s after start", time.Since(start).Round(100*time.Millisecond))

	quickStart(t, r.ctx, admin, []string{h.IP.String()})
	ingressThrough(t, r.ctx, admin, r.dir, "aio", h.IP.String())

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Errorf("tugboat up after SIGTERM: %v (want a clean exit; see %s)", err, p.LogPath())
	}

	// tugboat down, with up's node flags, leaves nothing of the node.
	if out, err := h.Output(r.ctx, exec.Command(filepath.Join(built.binDir, "tugboat"), "down",
		"--data-dir", data, "--node-name", "aio", "--cgroup-root", r.cgroupRoot("aio"),
		"--cni-conf-dir", filepath.Join(data, "cni"), "--no-user-config")); err != nil {
		t.Fatalf("tugboat down: %v\n%s", err, out)
	}
	// The kubelet's own containerd (CRI): purged, stopped, its runtime
	// state removed; its image store stays for the next start.
	if _, err := os.Stat(filepath.Join(data, "containerd", "state")); !os.IsNotExist(err) {
		t.Errorf("the kubelet's containerd's state is still there (%v)", err)
	}
	if ps, _ := exec.Command("pgrep", "-f", filepath.Join(data, "containerd")).Output(); len(ps) > 0 {
		t.Errorf("processes of the kubelet's containerd left: %s", ps)
	}
	if dirs := runtime.CgroupDirs(r.cgroupRoot("aio")); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), " "+data+"/") {
		t.Errorf("mounts left under %s", data)
	}
	if _, err := os.Stat(filepath.Join(data, "cni")); !os.IsNotExist(err) {
		t.Errorf("the CNI config folder up made is still there (%v)", err)
	}
	links, _ := h.Output(r.ctx, exec.Command("ip", "-o", "link", "show", "type", "bridge"))
	tables, _ := h.Output(r.ctx, exec.Command("nft", "list", "tables"))
	if strings.Contains(string(links), "cni0") || strings.Contains(string(tables), "tugboat") {
		t.Errorf("left in the node's network:\n%s%s", links, tables)
	}
}
