package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/internal/containerdconfig"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Defaults for Config.
const (
	DefaultEndpoint     = "unix:///run/containerd/containerd.sock"
	DefaultCgroupParent = "/tugboat"
	// DefaultImportNamespace is the containerd namespace the CRI plugin
	// keeps its images in; imports go there.
	DefaultImportNamespace = "k8s.io"
	// DefaultTimeout bounds each CRI call but image pulls (the kubelet's
	// --runtime-request-timeout in Kubernetes).
	DefaultTimeout = 2 * time.Minute
)

// Config configures the CRI runtime.
type Config struct {
	// Endpoint is the CRI socket, "unix:///path" or a bare path
	// (DefaultEndpoint): Kubernetes' --container-runtime-endpoint.
	Endpoint string
	// ImageEndpoint is the ImageService socket; empty is Endpoint.
	ImageEndpoint string
	// CgroupParent is the cgroup under which a sandbox without its own
	// CgroupParent gets "pod<uid>" (DefaultCgroupParent), cgroupfs style.
	CgroupParent string
	// RuntimeHandler names the runtime class the sandboxes run with; empty
	// is the runtime's default.
	RuntimeHandler string
	// Timeout bounds each call (DefaultTimeout); pulls and imports are
	// bounded only by their context.
	Timeout time.Duration
	// ImportNamespace is the containerd namespace ImportImage writes to
	// (DefaultImportNamespace). The CRI has no import: ImportImage talks
	// to containerd's own API on the endpoint's socket, so it needs a
	// containerd runtime; with another runtime it returns an error saying
	// so.
	ImportNamespace string
	// Snapshotter is the runtime's snapshotter, which imported images are
	// unpacked for (containerdconfig.DefaultSnapshotter).
	Snapshotter string
	// SandboxImage is the runtime's pause image, as its config names it
	// (containerdconfig.DefaultSandboxImage); a sandbox that cannot be
	// made while it is missing fails with runtime.ErrSandboxImage and a
	// hint to import it. Kubernetes' --pod-infra-container-image.
	SandboxImage string
	// KillTimeout bounds the wait for a container to exit after its grace
	// period, when StopContainer is cancelled (default 10s).
	KillTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.ImageEndpoint == "" {
		c.ImageEndpoint = c.Endpoint
	}
	if c.CgroupParent == "" {
		c.CgroupParent = DefaultCgroupParent
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ImportNamespace == "" {
		c.ImportNamespace = DefaultImportNamespace
	}
	if c.KillTimeout == 0 {
		c.KillTimeout = 10 * time.Second
	}
	if c.Snapshotter == "" {
		c.Snapshotter = containerdconfig.DefaultSnapshotter
	}
	if c.SandboxImage == "" {
		c.SandboxImage = containerdconfig.DefaultSandboxImage
	}
}

// Validate names the bad field, if any.
func (c Config) Validate() error {
	for _, e := range []struct{ name, v string }{{"endpoint", c.Endpoint}, {"image endpoint", c.ImageEndpoint}} {
		if e.v == "" {
			continue
		}
		if _, err := socketPath(e.v); err != nil {
			return fmt.Errorf("cri config: %s: %w", e.name, err)
		}
	}
	if c.Timeout < 0 || c.KillTimeout < 0 {
		return errors.New("cri config: timeouts: must not be negative")
	}
	return nil
}

// SocketPath returns the unix socket path of a CRI endpoint
// ("unix:///path" or a bare absolute path).
func SocketPath(endpoint string) (string, error) { return socketPath(endpoint) }

// socketPath returns the unix socket path of an endpoint.
func socketPath(endpoint string) (string, error) {
	if strings.HasPrefix(endpoint, "/") {
		return endpoint, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("%q: %v", endpoint, err)
	}
	if u.Scheme != "unix" || u.Path == "" {
		return "", fmt.Errorf("%q: want unix:///path/to/socket (only unix sockets are supported)", endpoint)
	}
	return u.Path, nil
}

// Runtime is a runtime.Runtime over the CRI.
type Runtime struct {
	cfg     Config
	conn    *grpc.ClientConn
	imgConn *grpc.ClientConn
	rs      cri.RuntimeServiceClient
	is      cri.ImageServiceClient
	logger  *slog.Logger

	// sandboxes caches the CRI config of sandboxes made or read since
	// start (CreateContainer sends it again); configs never change.
	mu        sync.Mutex
	sandboxes map[string]*cri.PodSandboxConfig

	importer *importer
}

var _ runtime.Runtime = (*Runtime)(nil)

// maxMsgSize is the largest CRI message accepted (Kubernetes' 16 MiB: a
// node's full container or image list).
const maxMsgSize = 16 << 20

// New connects to the CRI endpoint. It does not fail if the runtime is
// down (Version reports ErrUnavailable until it is up). Close releases the
// connections.
func New(cfg Config, logger *slog.Logger) (*Runtime, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dial := func(endpoint string) (*grpc.ClientConn, error) {
		path, _ := socketPath(endpoint)
		conn, err := grpc.NewClient("unix://"+path,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
		)
		if err != nil {
			return nil, fmt.Errorf("cri endpoint %s: %w", endpoint, err)
		}
		return conn, nil
	}
	conn, err := dial(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	imgConn := conn
	if cfg.ImageEndpoint != cfg.Endpoint {
		if imgConn, err = dial(cfg.ImageEndpoint); err != nil {
			conn.Close()
			return nil, err
		}
	}
	path, _ := socketPath(cfg.ImageEndpoint)
	return &Runtime{
		cfg:       cfg,
		conn:      conn,
		imgConn:   imgConn,
		rs:        cri.NewRuntimeServiceClient(conn),
		is:        cri.NewImageServiceClient(imgConn),
		logger:    logger.With("runtime", "cri"),
		sandboxes: make(map[string]*cri.PodSandboxConfig),
		importer:  &importer{address: path, namespace: cfg.ImportNamespace, snapshotter: cfg.Snapshotter},
	}, nil
}

// Close closes the connections.
func (r *Runtime) Close() error {
	err := r.conn.Close()
	if r.imgConn != r.conn {
		err = errors.Join(err, r.imgConn.Close())
	}
	return errors.Join(err, r.importer.close())
}

// Endpoint is the CRI endpoint, for messages that tell people to look
// with crictl.
func (r *Runtime) Endpoint() string { return r.cfg.Endpoint }

// call bounds a call by the configured timeout.
func (r *Runtime) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.cfg.Timeout)
}

// Version implements runtime.Runtime: the runtime's name and version as
// the CRI reports them (containerd://1.6.20). Any failure wraps
// runtime.ErrUnavailable; without a deadline on ctx it gives up after 10s.
func (r *Runtime) Version(ctx context.Context) (runtime.VersionInfo, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	v, err := r.rs.Version(ctx, &cri.VersionRequest{})
	if err != nil {
		return runtime.VersionInfo{}, fmt.Errorf("CRI runtime at %s: %w: %w", r.cfg.Endpoint, runtime.ErrUnavailable, err)
	}
	return runtime.VersionInfo{
		RuntimeName:    v.RuntimeName,
		RuntimeVersion: strings.TrimPrefix(v.RuntimeVersion, "v"),
	}, nil
}

// ErrNetworkNotReady wraps the reason a runtime gives for its network not
// being ready (NetworkStatus).
var ErrNetworkNotReady = errors.New("container runtime network not ready")

// NetworkStatus reports the runtime's NetworkReady condition: nil when
// ready, else an error wrapping ErrNetworkNotReady with the runtime's
// reason and message ("cni plugin not initialized"), or
// runtime.ErrUnavailable if the runtime does not answer. A runtime not
// ready at all (RuntimeReady false) is reported as unavailable.
func (r *Runtime) NetworkStatus(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := r.rs.Status(ctx, &cri.StatusRequest{})
	if err != nil {
		return fmt.Errorf("CRI runtime at %s: %w: %w", r.cfg.Endpoint, runtime.ErrUnavailable, err)
	}
	var netCond *cri.RuntimeCondition
	for _, c := range resp.GetStatus().GetConditions() {
		switch c.Type {
		case cri.RuntimeReady:
			if !c.Status {
				return fmt.Errorf("CRI runtime at %s: %w: %s: %s", r.cfg.Endpoint, runtime.ErrUnavailable, c.Reason, c.Message)
			}
		case cri.NetworkReady:
			netCond = c
		}
	}
	if netCond == nil {
		return fmt.Errorf("%w: the runtime reports no %s condition", ErrNetworkNotReady, cri.NetworkReady)
	}
	if !netCond.Status {
		return fmt.Errorf("%w: %s: %s", ErrNetworkNotReady, netCond.Reason, netCond.Message)
	}
	return nil
}

// wrap adds context to a CRI error and maps its gRPC code onto the runtime
// package's sentinels, keeping the runtime's message.
func wrap(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	st, _ := status.FromError(err)
	var sentinel error
	switch st.Code() {
	case codes.NotFound:
		sentinel = runtime.ErrNotFound
	case codes.AlreadyExists:
		sentinel = runtime.ErrAlreadyExists
	case codes.InvalidArgument:
		sentinel = runtime.ErrInvalid
	case codes.Unavailable:
		sentinel = runtime.ErrUnavailable
	default:
		// containerd 1.6 answers a lookup of an unknown ID with Unknown
		// and this text.
		if strings.Contains(st.Message(), "not found") && strings.Contains(st.Message(), "an error occurred when try to find") {
			sentinel = runtime.ErrNotFound
		}
	}
	if sentinel == nil {
		return fmt.Errorf("%s: %s", msg, describe(err))
	}
	return &mappedError{msg: msg, sentinel: sentinel, cause: err}
}

// describe is a gRPC error's message without the "rpc error: code = ...
// desc =" wrapping.
func describe(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}

type mappedError struct {
	msg      string
	sentinel error
	cause    error
}

func (e *mappedError) Error() string   { return e.msg + ": " + describe(e.cause) }
func (e *mappedError) Unwrap() []error { return []error{e.sentinel, e.cause} }

// isNotFound reports whether err is a CRI or runtime NotFound.
func isNotFound(err error) bool {
	if errors.Is(err, runtime.ErrNotFound) {
		return true
	}
	return errors.Is(wrap(err, ""), runtime.ErrNotFound)
}
