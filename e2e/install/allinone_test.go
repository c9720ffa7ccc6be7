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

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestAllInOne runs `tugboat up` in one lab host, runs the quick-start
// workload on it, and stops it with SIGTERM.
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
		"--containerd-socket", r.ctd.Address,
		"--containerd-namespace", "tugboat-aio",
		"--cgroup-root", r.cgroupRoot("aio"),
		"--cni-conf-dir", filepath.Join(data, "cni"),
		"--import-images", built.imagesDir,
		"--no-user-config"))
	if err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(data, "admin.config")
	wait.Eventually(t, 2*time.Minute, "the node Ready", func() error {
		if p.Exited() {
			t.Fatalf("tugboat up exited; see %s", p.LogPath())
		}
		out, err := tugctl(r.ctx, admin, "get", "nodes", "--no-headers")
		if err != nil {
			return err
		}
		if !strings.Contains(out, " Ready ") {
			return fmt.Errorf("nodes:\n%s", out)
		}
		return nil
	})
	t.Logf("tugboat up: node Ready %s after start", time.Since(start).Round(100*time.Millisecond))

	quickStart(t, r.ctx, admin, []string{h.IP.String()})

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
		"--data-dir", data, "--node-name", "aio", "--containerd-socket", r.ctd.Address,
		"--containerd-namespace", "tugboat-aio", "--cgroup-root", r.cgroupRoot("aio"),
		"--cni-conf-dir", filepath.Join(data, "cni"), "--no-user-config")); err != nil {
		t.Fatalf("tugboat down: %v\n%s", err, out)
	}
	ctr, err := r.ctd.Client("tugboat-aio")
	if err != nil {
		t.Fatal(err)
	}
	defer ctr.Close()
	if cs, err := ctr.Containers(r.ctx); err != nil || len(cs) > 0 {
		t.Errorf("containers left in namespace tugboat-aio: %d (%v)", len(cs), err)
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
