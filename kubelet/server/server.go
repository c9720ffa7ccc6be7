// Package server is the kubelet's NodeAPI: container logs (follow,
// previous, tail), exec (stdin, tty, resize), attach to a container's own
// process (runtimes with an Attacher), port-forward (one TCP connection
// per stream to a port on the pod's localhost, inside its network
// namespace), image import and listing, cpu/memory stats, and a probe of
// a Service's path from the node. The kubelet serves it on the tunnel it
// keeps open to the apiserver (api/tunnel), which relays users' calls to
// the node that runs the pod — so it works when the apiserver cannot dial
// the node.
//
// Every call resolves the pod by namespace/name from the kubelet's pod
// cache and its containers through the runtime (by the pod-UID labels);
// errors are gRPC status codes with a message naming the pod and container.
//
// # The Service check is a probe
//
// CheckService (for tugctl trace service) does on the node what a user
// there would do: it asks the cluster DNS for the Service's name, connects
// to each ClusterIP port, and connects straight to endpoints of the port,
// from the network namespace of a pod running on the node (as `tugctl exec
// POD -- wget CLUSTER_IP:PORT` would, without needing a shell in the
// image), or the node's own namespace when no pod runs there. It does not
// read the proxy's rules. Components meet only through the API, so the kubelet
// must not know the proxy's nftables layout (it once read the proxy's
// table, which linked the proxy's datapath into the kubelet); and a probe
// answers the question the user has — does traffic get through from this
// node — whoever programmed the datapath (our proxy, an operator's
// iptables), and it also sees what no rule table shows: an endpoint that
// does not listen on its port, a missing route to another node's pods, a
// firewall. The other way, the proxy answering questions about its own
// datapath over a tunnel of its own, would add a second tunnel and relay
// per node and could only report what the proxy believes it programmed.
// What a probe cannot tell: how many endpoints the datapath balances over,
// and whether a silent UDP port works (UDP has no handshake: "no-reply"
// proves nothing). A pod's namespace is preferred because its packets take
// the path every pod's take (through the bridge, translated before they
// are routed); from the node's own namespace they take the output path,
// which needs the node to have a route towards the Service CIDR (a default
// route) before the datapath ever sees them. The probe only connects and
// closes; it sends no data on TCP and one empty datagram on UDP, and it
// enters the pod's network namespace only (no container, no exec).
package server

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Pods finds pods bound to this node by "namespace/name" (the kubelet's
// pod informer).
type Pods interface {
	Get(key string) (*v1.Pod, bool)
}

// Config wires a Server.
type Config struct {
	NodeName string
	Runtime  runtime.Runtime
	// Streams is the runtime asked for the optional Attacher and
	// PortForwarder: the backend itself when Runtime wraps it
	// (runtime.Instrument hides them). Nil: Runtime.
	Streams any
	Pods    Pods
	// OnImport is called after images were imported (the pod workers
	// waiting for an image retry at once).
	OnImport func()
	// ClusterDNS is the cluster DNS address CheckService asks (the
	// kubelet's first --cluster-dns; port 53 unless given as ip:port);
	// empty: no DNS check.
	ClusterDNS string
	// ConnectTimeout bounds each connection CheckService tries (default
	// DefaultConnectTimeout).
	ConnectTimeout time.Duration
	Logger         *slog.Logger
}

// Server implements v1.NodeAPIServer.
type Server struct {
	v1.UnimplementedNodeAPIServer
	cfg   Config
	log   *slog.Logger
	stats *sampler
}

// New makes a Server.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Streams == nil {
		cfg.Streams = cfg.Runtime
	}
	return &Server{cfg: cfg, log: log, stats: newSampler()}
}

// Register adds the NodeAPI service to g.
func (s *Server) Register(g *grpc.Server) { v1.RegisterNodeAPIServer(g, s) }

func namespaceOr(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// pod returns the pod and the name of its container (the only one when
// container is empty).
func (s *Server) pod(ns, name, container string) (*v1.Pod, string, error) {
	ns = namespaceOr(ns)
	if name == "" {
		return nil, "", apierrors.Invalid("pod", "required")
	}
	pod, ok := s.cfg.Pods.Get(ns + "/" + name)
	if !ok {
		return nil, "", apierrors.New(apierrors.ErrNotFound, "pod %s/%s not found on node %s", ns, name, s.cfg.NodeName)
	}
	var names []string
	for _, c := range specContainers(pod) {
		names = append(names, c.Name)
		if c.Name == container {
			return pod, container, nil
		}
	}
	if container != "" {
		return nil, "", apierrors.Invalid("container", "container %q is not in pod %s/%s; its containers: [%s]", container, ns, name, strings.Join(names, " "))
	}
	if cs := pod.GetSpec().GetContainers(); len(cs) == 1 {
		return pod, cs[0].Name, nil
	}
	return nil, "", apierrors.Invalid("container", "a container name must be specified for pod %s/%s, choose one of: [%s]", ns, name, strings.Join(names, " "))
}

// specContainers are the pod's init, app and ephemeral containers (logs,
// exec and attach reach each, as Kubernetes').
func specContainers(pod *v1.Pod) []*v1.Container {
	out := append(append([]*v1.Container{}, pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...)
	for _, e := range pod.GetSpec().GetEphemeralContainers() {
		out = append(out, e.AsContainer())
	}
	return out
}

// attempts returns the pod's containers called name, newest first.
func (s *Server) attempts(ctx context.Context, pod *v1.Pod, name string) ([]runtime.ContainerStatus, error) {
	cs, err := s.cfg.Runtime.ListContainers(ctx, runtime.ContainerFilter{PodUID: pod.GetMetadata().GetUid()})
	if err != nil {
		return nil, apierrors.New(apierrors.ErrUnavailable, "listing containers of pod %s: %v", pod.GetMetadata().GetName(), err)
	}
	var out []runtime.ContainerStatus
	for _, c := range cs {
		if c.Name == name {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Attempt != out[j].Attempt {
			return out[i].Attempt > out[j].Attempt
		}
		return out[i].CreatedAt.After(out[j].CreatedAt)
	})
	return out, nil
}

// waitingReason is what the pod's status says a container waits for.
func waitingReason(pod *v1.Pod, name string) string {
	for _, cs := range append(append([]*v1.ContainerStatus{}, pod.GetStatus().GetInitContainerStatuses()...), pod.GetStatus().GetContainerStatuses()...) {
		if cs.Name == name {
			if w := cs.GetState().GetWaiting(); w != nil {
				return w.Reason
			}
		}
	}
	return "ContainerCreating"
}

func grpcErr(err error) error { return apierrors.ToGRPC(err) }

func errorf(kind error, format string, args ...any) error {
	return apierrors.ToGRPC(apierrors.New(kind, format, args...))
}
