// Package containerd implements the kubelet's runtime.Runtime on
// containerd's Go client: namespace "tugboat" by default, runc through the
// io.containerd.runc.v2 shim, OCI specs built with containerd's oci package.
//
// It works against containerd 1.6 (Debian 12's) and later: images come from
// client.Import (OCI or docker-archive tars) or client.Pull with a resolver
// (no Transfer service, which 1.6 lacks).
//
// Everything it knows is stored in containerd, as labels on containerd
// container records (see labels.go), so it keeps no state of its own and a
// restarted kubelet finds its sandboxes and containers again. A sandbox is a
// container record with no task and no snapshot (see the runtime package
// documentation). Container output goes straight from the shim to the log
// file, so logs survive kubelet restarts.
package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Defaults for Config.
const (
	DefaultNamespace    = "tugboat"
	DefaultRuntime      = "io.containerd.runc.v2"
	DefaultCgroupParent = "/tugboat"
	DefaultAddress      = "/run/containerd/containerd.sock"
)

// Config configures the containerd runtime.
type Config struct {
	// Address is containerd's gRPC socket (DefaultAddress).
	Address string
	// Namespace is the containerd namespace everything lives in
	// (DefaultNamespace). A kubelet owns everything in its namespace (it
	// adopts and garbage-collects by it), so kubelets sharing one containerd
	// (the e2e harness) need one namespace each; images are per namespace
	// too (their content is shared, so importing twice is cheap).
	Namespace string
	// Runtime is the containerd runtime (shim) name (DefaultRuntime).
	Runtime string
	// Snapshotter is the snapshotter for container root filesystems;
	// empty is containerd's default (overlayfs).
	Snapshotter string
	// CgroupParent is the cgroup under which a sandbox without its own
	// CgroupParent gets "pod<uid>" (DefaultCgroupParent).
	CgroupParent string
	// PlainHTTPRegistries are registry hosts ("host:port") pulled over
	// plain HTTP (a lab registry). Others use HTTPS, except that localhost
	// with a port falls back to HTTP as in containerd.
	PlainHTTPRegistries []string
	// RegistryConfigDir, if set, is a containerd hosts directory
	// (<dir>/<host>/hosts.toml) for mirrors and TLS settings.
	RegistryConfigDir string
	// FIFODir holds the named pipes of exec sessions; empty is containerd's
	// default (/run/containerd/fifo).
	FIFODir string
	// KillTimeout bounds the wait for a container to exit after SIGKILL
	// (default 10s).
	KillTimeout time.Duration
}

// Validate names the bad field, if any.
func (c Config) Validate() error {
	if c.KillTimeout < 0 {
		return fmt.Errorf("containerd config: killTimeout: must not be negative")
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Runtime == "" {
		c.Runtime = DefaultRuntime
	}
	if c.CgroupParent == "" {
		c.CgroupParent = DefaultCgroupParent
	}
	if c.KillTimeout == 0 {
		c.KillTimeout = 10 * time.Second
	}
}

// Runtime is a runtime.Runtime on containerd.
type Runtime struct {
	cfg    Config
	client *client.Client
	logger *slog.Logger
	locks  keyedMutex
}

var _ runtime.Runtime = (*Runtime)(nil)

// New connects to containerd. It does not fail if containerd is down (the
// kubelet reports ContainerRuntimeNotReady from Version until it is up).
// Close releases the connection.
func New(cfg Config, logger *slog.Logger) (*Runtime, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cl, err := client.New(cfg.Address,
		client.WithDefaultNamespace(cfg.Namespace),
		client.WithDefaultRuntime(cfg.Runtime),
	)
	if err != nil {
		return nil, fmt.Errorf("containerd client %s: %w", cfg.Address, err)
	}
	return &Runtime{cfg: cfg, client: cl, logger: logger.With("runtime", "containerd")}, nil
}

// Close closes the connection to containerd.
func (r *Runtime) Close() error { return r.client.Close() }

// Client is the underlying containerd client, for tests and diagnostics.
func (r *Runtime) Client() *client.Client { return r.client }

// Version implements runtime.Runtime. Any failure wraps
// runtime.ErrUnavailable; without a deadline on ctx it gives up after 10s
// (the client otherwise waits for the socket to appear).
func (r *Runtime) Version(ctx context.Context) (runtime.VersionInfo, error) {
	if _, err := os.Stat(r.cfg.Address); err != nil {
		return runtime.VersionInfo{}, fmt.Errorf("containerd at %s: %w: %v", r.cfg.Address, runtime.ErrUnavailable, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	v, err := r.client.Version(r.ns(ctx))
	if err != nil {
		return runtime.VersionInfo{}, fmt.Errorf("containerd at %s: %w: %w", r.cfg.Address, runtime.ErrUnavailable, err)
	}
	return runtime.VersionInfo{RuntimeName: "containerd", RuntimeVersion: v.Version, Revision: v.Revision}, nil
}

// ns puts the configured namespace on ctx.
func (r *Runtime) ns(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

// newID returns a random 32-hex-digit ID for sandboxes, containers and
// exec sessions.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// wrap adds context to a containerd error and maps it onto the runtime
// package's sentinels, keeping containerd's own error in the chain.
func wrap(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	var sentinel error
	switch {
	case errdefs.IsNotFound(err):
		sentinel = runtime.ErrNotFound
	case errdefs.IsAlreadyExists(err):
		sentinel = runtime.ErrAlreadyExists
	case errdefs.IsInvalidArgument(err):
		sentinel = runtime.ErrInvalid
	case errdefs.IsUnavailable(err):
		sentinel = runtime.ErrUnavailable
	}
	if sentinel == nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return &mappedError{msg: msg, sentinel: sentinel, cause: err}
}

type mappedError struct {
	msg      string
	sentinel error
	cause    error
}

func (e *mappedError) Error() string   { return e.msg + ": " + e.cause.Error() }
func (e *mappedError) Unwrap() []error { return []error{e.sentinel, e.cause} }

// keyedMutex serialises operations on one ID within this process.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(id string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = make(map[string]*keyedLock)
	}
	l := k.locks[id]
	if l == nil {
		l = &keyedLock{}
		k.locks[id] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, id)
		}
		k.mu.Unlock()
	}
}

// isNotFound reports whether err is containerd's or the runtime's NotFound.
func isNotFound(err error) bool {
	return errdefs.IsNotFound(err) || errors.Is(err, runtime.ErrNotFound)
}
