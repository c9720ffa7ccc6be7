// Package containerdtest starts a private containerd for tests: its own
// root, state, socket and config in a directory of the caller's, never the
// system's. It is used from TestMain (Start, Stop) or from a test (New), and
// by the e2e harness.
//
// The binaries (containerd, containerd-shim-runc-v2, runc) come from PATH;
// hack/install-deps.sh installs them. Without them, or without root, New
// skips the test with a message saying so, except under CI=true, where it
// fails: CI installs them, so CI never skips.
package containerdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"

	"github.com/tugboat/tugboat/api/wait"
)

// Binaries a private containerd needs on PATH.
var Binaries = []string{"containerd", "containerd-shim-runc-v2", "runc"}

// Check says why a private containerd cannot run here (not root, a binary
// missing), or nil if it can.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("containerdtest: needs root (containerd, runc and CNI need it)")
	}
	var missing []string
	for _, b := range Binaries {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("containerdtest: %s not found on PATH; install them with hack/install-deps.sh", strings.Join(missing, ", "))
	}
	return nil
}

// InCI reports whether the tests run in CI (CI=true), where a missing
// requirement is a failure, not a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require skips tb (or fails it in CI) if Check fails, and skips it with
// -short.
func Require(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs a private containerd; skipped with -short")
	}
	if err := Check(); err != nil {
		SkipOrFail(tb, err)
	}
}

// SkipOrFail skips tb with err's message, or fails it under CI=true.
func SkipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("%v (CI=true: not skipping)", err)
	}
	tb.Skip(err)
}

// Options configure Start.
type Options struct {
	// Dir holds root/, state/, config.toml, containerd.log and (if the path
	// is short enough for a unix socket) containerd.sock. Required. Stop
	// unmounts what is left mounted under it but does not remove it.
	Dir string
	// StartTimeout bounds the wait for containerd to answer (default 30s).
	StartTimeout time.Duration
	// Logger gets start and stop messages (default: discard).
	Logger *slog.Logger
	// CRI, if set, turns containerd's CRI plugin on with this config (the
	// kubelet's CRI backend); otherwise the CRI plugin is off.
	CRI *CRIOptions
	// NetNS, if set, is the path of a network namespace containerd runs
	// in: with CRI, the CNI plugins it runs make their bridge there and
	// its streaming server listens on that namespace's loopback. Empty:
	// the caller's namespace.
	NetNS string
}

// CRIOptions configure the CRI plugin of a private containerd (see
// package containerdconfig for what each one means). Pods' network
// namespaces are mounted under its state folder, never /var/run/netns.
type CRIOptions struct {
	// SandboxImage is the pause image (required), imported by the caller.
	SandboxImage string
	// CNIBinDir defaults to the first of network.DefaultBinDirs that has
	// the bridge plugin; CNIConfDir to <Dir>/net.d.
	CNIBinDir  string
	CNIConfDir string
	// RegistryConfigDir is the registry hosts folder, if any.
	RegistryConfigDir string
}

// Containerd is a running private containerd.
type Containerd struct {
	// Address is the gRPC socket to give client.New.
	Address string
	// Dir is Options.Dir; LogPath is containerd's own log.
	Dir     string
	LogPath string
	// PID of the containerd process.
	PID int
	// CRIEndpoint is the CRI endpoint ("unix://" + Address) when the CRI
	// plugin is on, else empty; CNIConfDir is where its CNI config goes.
	CRIEndpoint string
	CNIConfDir  string

	cmd          *exec.Cmd
	exited       chan struct{}
	configPath   string
	startTimeout time.Duration
	sockDir      string // a short temp dir for the socket, if Dir was too long
	netns        string
	logger       *slog.Logger
}

// New starts a private containerd for tb in a temp dir and stops it on
// cleanup. It skips tb (fails in CI) if Check fails.
func New(tb testing.TB) *Containerd {
	tb.Helper()
	Require(tb)
	c, err := Start(context.Background(), Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("stop containerd: %v", err)
		}
	})
	return c
}

// Start writes a config into opts.Dir, starts containerd and waits until it
// answers Version. The caller must Stop it.
func Start(ctx context.Context, opts Options) (*Containerd, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, errors.New("containerdtest: Options.Dir is required")
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &Containerd{Dir: dir, LogPath: filepath.Join(dir, "containerd.log"), exited: make(chan struct{}), logger: logger}
	c.Address = filepath.Join(dir, "containerd.sock")
	if len(c.Address) > 100 { // sun_path is 108 bytes, and ".ttrpc" is added
		if c.sockDir, err = os.MkdirTemp("", "ctd"); err != nil {
			return nil, err
		}
		c.Address = filepath.Join(c.sockDir, "containerd.sock")
	}
	text := config(dir, c.Address)
	if opts.CRI != nil {
		if text, err = c.criConfig(dir, *opts.CRI); err != nil {
			return nil, err
		}
	}
	configPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configPath, []byte(text), 0o644); err != nil {
		return nil, err
	}
	c.configPath, c.startTimeout, c.netns = configPath, opts.StartTimeout, opts.NetNS
	if err := c.launch(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// launch starts the containerd process on the written config and waits
// until it answers.
func (c *Containerd) launch(ctx context.Context) error {
	c.exited = make(chan struct{})
	logFile, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()

	c.cmd = exec.Command("containerd", "--config", c.configPath)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	// If the test binary dies, containerd goes too. Shims it started are
	// left for the next Stop of the same Dir, or for the e2e harness's
	// stale-state cleanup. Pdeathsig fires when the forking *thread* ends,
	// so containerd is forked from a thread locked for its whole life (Go
	// ends threads whose goroutine exits locked, as netns code does).
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	started := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		if c.netns != "" {
			// The thread is never unlocked: it ends with this goroutine,
			// so no other goroutine runs in the namespace.
			if err := setNetNS(c.netns); err != nil {
				started <- err
				close(c.exited)
				return
			}
		} else {
			defer goruntime.UnlockOSThread()
		}
		if err := c.cmd.Start(); err != nil {
			started <- err
			close(c.exited)
			return
		}
		started <- nil
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("containerdtest: start containerd: %w", err)
	}
	c.PID = c.cmd.Process.Pid
	c.logger.Info("started private containerd", "pid", c.PID, "address", c.Address, "dir", c.Dir)

	if err := c.waitReady(ctx, c.startTimeout); err != nil {
		_ = c.Stop()
		return err
	}
	return nil
}

// Restart stops containerd as a service restart or a crash does
// (SIGTERM, SIGKILL after 10s; nothing is cleaned up, so shims and
// containers keep running), calls down (if not nil) while it is stopped,
// then starts it again on the same root, state and socket.
func (c *Containerd) Restart(ctx context.Context, down func() error) error {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	}
	c.logger.Info("containerd stopped for a restart", "pid", c.PID)
	if down != nil {
		if err := down(); err != nil {
			return err
		}
	}
	return c.launch(ctx)
}

func (c *Containerd) waitReady(ctx context.Context, timeout time.Duration) error {
	exited := errors.New("exited")
	err := wait.Until(ctx, timeout, func(ctx context.Context) error {
		select {
		case <-c.exited:
			return wait.Stop(exited)
		default:
		}
		return c.ping(ctx)
	})
	if errors.Is(err, exited) {
		return fmt.Errorf("containerdtest: containerd exited during start: %s", c.tailLog())
	}
	if err != nil {
		return fmt.Errorf("containerdtest: containerd did not answer: %w; log: %s", err, c.tailLog())
	}
	return nil
}

func (c *Containerd) ping(ctx context.Context) error {
	if _, err := os.Stat(c.Address); err != nil {
		return err
	}
	cl, err := client.New(c.Address)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = cl.Version(pctx)
	return err
}

// Client returns a new client of this containerd in namespace ns; the
// caller closes it.
func (c *Containerd) Client(ns string) (*client.Client, error) {
	return client.New(c.Address, client.WithDefaultNamespace(ns))
}

func (c *Containerd) tailLog() string {
	f, err := os.Open(c.LogPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > 15 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func config(dir, address string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return `version = 2
root = ` + q(filepath.Join(dir, "root")) + `
state = ` + q(filepath.Join(dir, "state")) + `
disabled_plugins = [
  "io.containerd.grpc.v1.cri",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = ` + q(address) + `

[ttrpc]
  address = ` + q(address+".ttrpc") + `

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = ` + q(filepath.Join(dir, "opt")) + `
`
}

// ShimPIDs lists the PIDs of the shims this containerd started (found by
// the address on their command line).
func (c *Containerd) ShimPIDs() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if !strings.Contains(args[0], "containerd-shim") {
			continue
		}
		for i := 1; i < len(args); i++ {
			if args[i-1] == "-address" && args[i] == c.Address {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
