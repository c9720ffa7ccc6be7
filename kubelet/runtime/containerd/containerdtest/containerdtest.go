// Package containerdtest starts a private containerd for tests
// (kubelet/runtime/containerd/daemon: its own root, state, socket and
// config in a directory of the caller's, never the system's), with the CRI
// plugin off (the kubelet's containerd backend) or on (its CRI backend).
// It is used from TestMain (Start, Stop) or from a test (New), and by the
// e2e harness.
//
// Without root or the binaries (hack/install-deps.sh installs them), New
// skips the test with a message saying so, except under CI=true, where it
// fails: CI installs them, so CI never skips.
package containerdtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
)

// Check says why a private containerd cannot run here (not root, a binary
// missing), or nil if it can.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("containerdtest: needs root (containerd, runc and CNI need it)")
	}
	if err := daemon.Check(); err != nil {
		return fmt.Errorf("containerdtest: %w", err)
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
	// Dir holds the containerd's root, state, config, log and socket.
	// Required. Stop unmounts what is left mounted under it but does not
	// remove it.
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

// Containerd is a running private containerd: a daemon.Daemon whose Stop
// removes what the tests left in it first.
type Containerd struct {
	*daemon.Daemon
	// CRIEndpoint is the CRI endpoint ("unix://" + Address) when the CRI
	// plugin is on, else empty; CNIConfDir is where its CNI config goes.
	CRIEndpoint string
	CNIConfDir  string
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
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	c := &Containerd{}
	text := ""
	if opts.CRI != nil {
		if text, err = c.criConfig(dir, daemon.Address(dir), *opts.CRI); err != nil {
			return nil, err
		}
	}
	c.Daemon, err = daemon.Start(ctx, daemon.Options{Dir: dir, Config: text, NetNS: opts.NetNS, StartTimeout: opts.StartTimeout, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("containerdtest: %w", err)
	}
	return c, nil
}

// Stop removes what tests left in the containerd (pod sandboxes through
// the CRI, so CNI DEL runs for each; then every task, killed so no shim
// outlives it, and container), stops containerd by its PID (SIGTERM,
// SIGKILL after 10s), and unmounts anything still mounted under Dir. It
// does not remove Dir. Safe to call twice.
func (c *Containerd) Stop() error {
	var errs []error
	select {
	case <-c.Exited():
	default:
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := c.purgeCRI(ctx); err != nil {
			errs = append(errs, fmt.Errorf("purge pod sandboxes: %w", err))
		}
		if err := daemon.Purge(ctx, c.Address); err != nil {
			errs = append(errs, fmt.Errorf("purge: %w", err))
		}
		cancel()
		c.Daemon.Stop()
	}
	if err := daemon.UnmountUnder(c.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
