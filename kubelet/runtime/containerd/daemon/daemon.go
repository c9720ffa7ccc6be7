// Package daemon runs a containerd of Tugboat's own: its root, state,
// config, log and socket in one directory of the caller's, never the
// system's /var/lib/containerd or /run/containerd, as k3s runs its own.
// `tugboat up` and `make local-up` use it (through the kubelet's
// --containerd-dir) when no containerd answers, and the tests use it
// (kubelet/runtime/containerd/containerdtest) for a private one.
//
// Lifecycle: Start writes <dir>/config.toml and starts containerd, forked
// from a thread that stays locked for its life with SIGTERM as its
// parent-death signal, so containerd stops when its owner dies. Stop ends
// containerd as a service stop does (SIGTERM, SIGKILL after 10s) and
// leaves the shims and containers running, so the next Start on the same
// dir finds them, as a restarted kubelet adopts its pods. Purge kills and
// deletes every task and container first (what a teardown wants);
// UnmountUnder then unmounts what is still mounted under the dir.
//
// What it touches: the dir, the processes it starts, and (Purge) what
// that containerd runs.
//
// The binaries (containerd, containerd-shim-runc-v2, runc) come from PATH
// (Debian's containerd and runc packages; hack/install-deps.sh).
package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/api/wait"
)

// Binaries a containerd of our own needs on PATH.
var Binaries = []string{"containerd", "containerd-shim-runc-v2", "runc"}

// Check says which of Binaries are missing from PATH, or nil.
func Check() error {
	var missing []string
	for _, b := range Binaries {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found on PATH; install them with hack/install-deps.sh (Debian: apt-get install containerd runc)", strings.Join(missing, ", "))
	}
	return nil
}

// Options configure Start.
type Options struct {
	// Dir holds root/, state/, opt/, config.toml, containerd.log and (if
	// the path is short enough for a unix socket) containerd.sock.
	// Required.
	Dir string
	// Config, if set, is the whole config.toml (the tests' CRI config);
	// empty: the config of the kubelet's containerd backend, CRI off, with
	// root, state, opt and socket under Dir.
	Config string
	// NetNS, if set, is the path of a network namespace containerd runs
	// in (and so its shims and what they run); empty: the caller's.
	NetNS string
	// StartTimeout bounds the wait for containerd to answer (default 30s).
	StartTimeout time.Duration
	// Logger gets start and stop messages (default: discard).
	Logger *slog.Logger
}

// Daemon is a running containerd of our own.
type Daemon struct {
	// Address is the gRPC socket to give client.New.
	Address string
	// Dir is Options.Dir; LogPath is containerd's own log.
	Dir     string
	LogPath string
	// PID of the containerd process.
	PID int

	cmd          *exec.Cmd
	exited       chan struct{}
	configPath   string
	startTimeout time.Duration
	netns        string
	logger       *slog.Logger
}

// Address is the socket a containerd started in dir listens on: under dir
// if the path fits a unix socket, else in a short folder under /run named
// for the dir.
func Address(dir string) string {
	a := filepath.Join(dir, "containerd.sock")
	if len(a) <= 100 { // sun_path is 108 bytes, and ".ttrpc" is added
		return a
	}
	return filepath.Join("/run", "tugboat-containerd-"+strconv.FormatUint(uint64(hash(dir)), 36), "containerd.sock")
}

func hash(s string) uint32 {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// Start writes a config into opts.Dir, starts containerd and waits until it
// answers Version. The caller must Stop it.
func Start(ctx context.Context, opts Options) (*Daemon, error) {
	if err := Check(); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	if opts.Dir == "" {
		return nil, errors.New("containerd: Options.Dir is required")
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
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	d := &Daemon{Dir: dir, LogPath: filepath.Join(dir, "containerd.log"), Address: Address(dir), exited: make(chan struct{}), logger: logger}
	if err := os.MkdirAll(filepath.Dir(d.Address), 0o711); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	text := opts.Config
	if text == "" {
		text = config(dir, d.Address)
	}
	d.configPath = filepath.Join(dir, "config.toml")
	if err := os.WriteFile(d.configPath, []byte(text), 0o644); err != nil {
		return nil, err
	}
	d.startTimeout, d.netns = opts.StartTimeout, opts.NetNS
	if err := d.launch(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// launch starts the containerd process on the written config and waits
// until it answers.
func (d *Daemon) launch(ctx context.Context) error {
	d.exited = make(chan struct{})
	logFile, err := os.OpenFile(d.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()

	d.cmd = exec.Command("containerd", "--config", d.configPath)
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	// If the owner dies, containerd goes too (its shims and containers
	// stay, as after Stop). Pdeathsig fires when the forking *thread*
	// ends, so containerd is forked from a thread locked for its whole
	// life (Go ends threads whose goroutine exits locked).
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if d.netns != "" {
			// The thread is never unlocked: it ends with this goroutine,
			// so no other goroutine runs in the namespace.
			if err := setNetNS(d.netns); err != nil {
				started <- err
				close(d.exited)
				return
			}
		} else {
			defer runtime.UnlockOSThread()
		}
		if err := d.cmd.Start(); err != nil {
			started <- err
			close(d.exited)
			return
		}
		started <- nil
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("containerd: start: %w", err)
	}
	d.PID = d.cmd.Process.Pid
	d.logger.Info("started containerd", "pid", d.PID, "address", d.Address, "dir", d.Dir)
	if err := d.waitReady(ctx, d.startTimeout); err != nil {
		_ = d.cmd.Process.Kill()
		<-d.exited
		return err
	}
	return nil
}

// setNetNS moves the calling thread into the network namespace at path.
func setNetNS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netns %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter netns %s: %w", path, err)
	}
	return nil
}

// Restart stops containerd as a service restart or a crash does
// (SIGTERM, SIGKILL after 10s; nothing is cleaned up, so shims and
// containers keep running), calls down (if not nil) while it is stopped,
// then starts it again on the same root, state and socket.
func (d *Daemon) Restart(ctx context.Context, down func() error) error {
	d.terminate()
	d.logger.Info("containerd stopped for a restart", "pid", d.PID)
	if down != nil {
		if err := down(); err != nil {
			return err
		}
	}
	return d.launch(ctx)
}

// Stop ends containerd (SIGTERM, SIGKILL after 10s) and leaves its shims
// and containers running. It removes the socket folder under /run that a
// dir too long for a socket path needed. Safe to call twice.
func (d *Daemon) Stop() {
	select {
	case <-d.exited:
	default:
		d.terminate()
		d.logger.Info("stopped containerd", "pid", d.PID)
	}
	if sock := filepath.Dir(d.Address); sock != d.Dir {
		_ = os.RemoveAll(sock)
	}
}

func (d *Daemon) terminate() {
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

// Exited is closed when the containerd process has exited.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

func (d *Daemon) waitReady(ctx context.Context, timeout time.Duration) error {
	exited := errors.New("exited")
	err := wait.Until(ctx, timeout, func(ctx context.Context) error {
		select {
		case <-d.exited:
			return wait.Stop(exited)
		default:
		}
		return Ping(ctx, d.Address)
	})
	if errors.Is(err, exited) {
		return fmt.Errorf("containerd exited during start: %s", d.tailLog())
	}
	if err != nil {
		return fmt.Errorf("containerd did not answer: %w; log: %s", err, d.tailLog())
	}
	return nil
}

// Ping says whether a containerd answers Version at address (nil) or why
// not.
func Ping(ctx context.Context, address string) error {
	if _, err := os.Stat(address); err != nil {
		return err
	}
	cl, err := client.New(address)
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
func (d *Daemon) Client(ns string) (*client.Client, error) {
	return client.New(d.Address, client.WithDefaultNamespace(ns))
}

func (d *Daemon) tailLog() string {
	f, err := os.Open(d.LogPath)
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
func (d *Daemon) ShimPIDs() []int { return ShimPIDs(d.Address) }

// ShimPIDs lists the PIDs of the shims of the containerd at address.
func ShimPIDs(address string) []int {
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
			if args[i-1] == "-address" && args[i] == address {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
