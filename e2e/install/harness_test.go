package install

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/e2e/netlab"
	"github.com/tugboat/tugboat/kubelet/network/networktest"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
)

// built holds the binaries and image archives TestMain made, or why it
// could not.
var built struct {
	binDir    string // apiserver, scheduler, ..., tugctl, tugboat
	imagesDir string // busybox.tar, echo.tar, pause.tar (make images)
	moduleDir string
	skip      error
}

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	flag.Parse()
	if err := check(); err != nil || testing.Short() {
		built.skip = err
		if err == nil {
			built.skip = fmt.Errorf("skipped with -short")
		}
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "tugboat-install-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := build(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e/install:", err)
		return 1
	}
	return m.Run()
}

// check says why the tests cannot run here.
func check() error {
	if err := containerdtest.Check(); err != nil {
		return err
	}
	if err := networktest.Check(); err != nil {
		return err
	}
	if _, err := exec.LookPath("bash"); err != nil {
		return fmt.Errorf("bash not found (hack/install.sh is a bash script)")
	}
	return nil
}

// build compiles every binary the installs use and the example images.
func build(ctx context.Context, dir string) error {
	mod, err := cluster.ModuleDir()
	if err != nil {
		return err
	}
	built.moduleDir = mod
	built.binDir = filepath.Join(dir, "bin")
	built.imagesDir = filepath.Join(dir, "images")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", built.binDir+"/",
		"./cmd/apiserver", "./cmd/scheduler", "./cmd/controller-manager", "./cmd/kubelet",
		"./cmd/proxy", "./cmd/tugctl", "./cmd/tugboat", "./deploy/tugboat-init")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	if err := os.MkdirAll(built.imagesDir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"busybox", "echo", "pause"} {
		f, err := os.Create(filepath.Join(built.imagesDir, name+".tar"))
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		err = images.Build(ctx, name, w, images.BuildOptions{ModuleDir: mod})
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("image %s: %w", name, err)
		}
	}
	return nil
}

// requireBuilt skips t (fails it in CI) when TestMain could not build.
func requireBuilt(t *testing.T) {
	t.Helper()
	netlab.RequireRoot(t)
	if built.skip != nil {
		containerdtest.SkipOrFail(t, fmt.Errorf("%w (install the dependencies with hack/install-deps.sh)", built.skip))
	}
}

// run is one test run: a lab, a locked run directory that follows
// e2e/cluster's layout, and a private containerd.
type run struct {
	t   *testing.T
	ctx context.Context
	lab *netlab.Lab
	dir string
	ctd *containerdtest.Containerd
	log *slog.Logger
}

// newRun makes the lab (hosts hosts), the run directory and containerd;
// all are removed when t ends, after the logs of a failed test are shown.
func newRun(t *testing.T, hosts int) *run {
	t.Helper()
	requireBuilt(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if _, err := cluster.CleanupStale(ctx, cluster.DefaultBaseDir, log); err != nil {
		t.Logf("removing stale runs: %v", err)
	}
	logDir := t.TempDir()
	lab := netlab.NewForTest(t, netlab.Config{Hosts: hosts, LogDir: logDir})
	r := &run{t: t, ctx: ctx, lab: lab, log: log}
	var lock *os.File
	r.dir, lock = lockRunDir(t, lab.ID)
	ctdDir := filepath.Join(r.dir, "containerd")
	err := os.MkdirAll(ctdDir, 0o755)
	var ctd *containerdtest.Containerd
	if err == nil {
		ctd, err = containerdtest.Start(ctx, containerdtest.Options{Dir: ctdDir})
	}
	if err != nil {
		lock.Close()
		t.Fatal(err)
	}
	r.ctd = ctd
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(t, logDir)
			hold(t, lab)
		}
		lab.Hosts[0].Stop() // processes before containerd: kubelets must not recreate
		for _, h := range lab.Hosts[1:] {
			h.Stop()
		}
		if err := ctd.Stop(); err != nil {
			t.Errorf("stop containerd: %v", err)
		}
		// The lab goes with its own cleanup (registered before); the run
		// directory, its mounts and the run's cgroups now, once unlocked.
		lock.Close()
		if _, err := cluster.CleanupStale(context.Background(), cluster.DefaultBaseDir, log); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return r
}

// lockRunDir makes <base>/<id> and locks it, as e2e/cluster does, so that
// stale cleanups (e2e/cluster's and ours) leave it alone while the lock is
// held and remove it — the directory, its mounts and cgroups
// /tugboat-e2e/<id> — once it is released.
func lockRunDir(t *testing.T, id string) (string, *os.File) {
	base := cluster.DefaultBaseDir
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	setup, err := os.OpenFile(filepath.Join(base, ".setup.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	if err := unix.Flock(int(setup.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		t.Fatal(err)
	}
	return dir, lock
}

// cgroupRoot is where a node's pods go: under the run's cgroup, which
// e2e/cluster's cleanup removes.
func (r *run) cgroupRoot(node string) string {
	return "/tugboat-e2e/" + r.lab.ID + "/" + node
}

// startEnv starts a component in host h the way its systemd unit does:
// prefix/bin/<name> with the ARGS of etcDir/<name>.env, split on white
// space.
func (r *run) startEnv(h *netlab.Host, prefix, etcDir, name string) *netlab.Proc {
	r.t.Helper()
	return r.startBin(h, filepath.Join(prefix, "bin", name), etcDir, name)
}

// startBin is startEnv for a binary installed elsewhere (the
// distribution's etcd).
func (r *run) startBin(h *netlab.Host, bin, etcDir, name string) *netlab.Proc {
	r.t.Helper()
	args := readEnvArgs(r.t, filepath.Join(etcDir, name+".env"))
	p, err := h.Start(r.ctx, exec.Command(bin, args...))
	if err != nil {
		r.t.Fatalf("start %s on %s: %v", name, h.Name, err)
	}
	r.t.Logf("%s on %s: %s (log %s)", name, h.Name, strings.Join(args, " "), p.LogPath())
	return p
}

// readEnvArgs reads ARGS="..." from an env file written by install.sh.
func readEnvArgs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "ARGS="); ok {
			return strings.Fields(strings.Trim(v, `"`))
		}
	}
	t.Fatalf("%s: no ARGS line", path)
	return nil
}

// installSh runs hack/install.sh with args in the root namespace (it only
// writes files with --no-systemd) and returns its output.
func (r *run) installSh(args ...string) string {
	r.t.Helper()
	cmd := exec.CommandContext(r.ctx, "bash", append([]string{filepath.Join(built.moduleDir, "hack", "install.sh")}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("install.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// tugctl runs the built tugctl with the config; it returns stdout.
// waitReadyNodes waits until exactly n nodes are Ready, as tugctl lists
// them; alive, if set, is checked first on every try, and its error (a
// component the test started has exited) fails the test at once.
func waitReadyNodes(t *testing.T, ctx context.Context, config string, n int, alive func() error) {
	t.Helper()
	wait.Eventually(t, 2*time.Minute, fmt.Sprintf("%d Ready node(s)", n), func() error {
		if alive != nil {
			if err := alive(); err != nil {
				t.Fatal(err)
			}
		}
		out, err := tugctl(ctx, config, "get", "nodes", "--no-headers")
		if err != nil {
			return err
		}
		if got := strings.Count(out, " Ready "); got != n {
			return fmt.Errorf("nodes:\n%s", out)
		}
		return nil
	})
}

func tugctl(ctx context.Context, config string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(built.binDir, "tugctl"), append([]string{"--config", config}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("tugctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// dumpLogs prints the tail of every log file in dir.
func dumpLogs(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		t.Logf("--- %s (last %d lines):\n%s", filepath.Base(f), len(lines), strings.Join(lines, "\n"))
	}
}

// hold keeps a failed run's lab up for TUGBOAT_E2E_HOLD (a duration, e.g.
// 10m) before cleanup, to look at it with `ip netns exec <host> ...`.
func hold(t *testing.T, lab *netlab.Lab) {
	d, err := time.ParseDuration(os.Getenv("TUGBOAT_E2E_HOLD"))
	if err != nil || d <= 0 {
		return
	}
	t.Logf("TUGBOAT_E2E_HOLD: keeping lab %s (hosts %s..) for %s", lab.ID, lab.Hosts[0].Name, d)
	time.Sleep(d)
}

// startContainerd starts host h's containerd as its systemd unit would,
// on the config install.sh wrote (root, state and socket in dir), in the
// host's network namespace (the CNI plugins it runs make the bridge
// there). It is stopped, with what is left in it removed through the CRI,
// when the test ends, after h's processes.
func (r *run) startContainerd(h *netlab.Host, dir, config string) *containerdtest.Containerd {
	r.t.Helper()
	text, err := os.ReadFile(config)
	if err != nil {
		r.t.Fatal(err)
	}
	d, err := daemon.Start(r.ctx, daemon.Options{Dir: dir, Config: string(text), NetNS: h.NetnsPath, Logger: r.log})
	if err != nil {
		r.t.Fatalf("containerd of %s on %s: %v", h.Name, config, err)
	}
	c := &containerdtest.Containerd{Daemon: d, CRIEndpoint: "unix://" + d.Address}
	r.t.Cleanup(func() {
		h.Stop()
		if err := c.Stop(); err != nil {
			r.t.Errorf("stop containerd of %s: %v", h.Name, err)
		}
	})
	return c
}

// crictl runs crictl against a CRI endpoint and returns its output.
func crictl(ctx context.Context, endpoint string, args ...string) (string, error) {
	args = append([]string{"--runtime-endpoint", endpoint, "--image-endpoint", endpoint, "--timeout", "10s"}, args...)
	out, err := exec.CommandContext(ctx, "crictl", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("crictl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
