package install

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
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
}
