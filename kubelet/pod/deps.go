package pod

import (
	"context"
	"net/netip"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/prober"
)

// The interfaces below are what the pod workers consume. The kubelet
// wires the real implementations (kubelet/network, kubelet/prober, the
// API client, the event recorder); tests use fakes. The runtime itself is
// runtime.Runtime.

// Network makes pod network namespaces and runs CNI on them.
// *network.Manager implements every method but Ready and NetNSExists.
type Network interface {
	// Ready is nil when new pod networks can be set up, or an error that
	// says why not (wrapping network.ErrNotReady).
	Ready() error
	CreateNetNS(name string) (string, error)
	// DeleteNetNS is idempotent.
	DeleteNetNS(path string) error
	NetNSExists(path string) bool
	SetUpPod(ctx context.Context, pod network.PodNetwork) (netip.Addr, error)
	// TearDownPod is idempotent and works after the netns is gone.
	TearDownPod(ctx context.Context, pod network.PodNetwork) error
	// PodIP is the address of the pod's last CNI ADD, from the cache.
	PodIP(pod network.PodNetwork) (netip.Addr, bool)
}

// Prober runs probes; *prober.Manager implements it.
type Prober interface {
	UpdatePod(pod *v1.Pod, podIP string, targets []prober.Target)
	RemovePod(uid string)
	Result(podUID, container string, kind prober.Kind) prober.Result
}

// Recorder records Events; *record.Recorder implements it.
type Recorder interface {
	Eventf(obj v1.Object, typ, reason, format string, args ...any)
}

// PodAPI is the part of the pods API the kubelet writes through;
// *client.Typed[*v1.Pod] implements it.
type PodAPI interface {
	Get(ctx context.Context, ns, name string) (*v1.Pod, error)
	UpdateStatus(ctx context.Context, pod *v1.Pod) (*v1.Pod, error)
	Delete(ctx context.Context, ns, name string, opts client.DeleteOptions) (*v1.Pod, error)
}

// Sources reads the ConfigMaps and Secrets that pods refer to (env and
// volumes). Errors wrap apierrors.ErrNotFound for a missing object.
type Sources interface {
	ConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, ns, name string) (*v1.Secret, error)
	// Services returns every Service the node knows of (for the Service
	// environment variables), or an error until they have been read once.
	Services() ([]*v1.Service, error)
}

// Event types, as record.Normal and record.Warning.
const (
	eventNormal  = "Normal"
	eventWarning = "Warning"
)
