// Package cri implements the kubelet's runtime.Runtime over the Container
// Runtime Interface (k8s.io/cri-api v1: RuntimeService and ImageService)
// against a CRI endpoint — containerd's CRI plugin by default
// (unix:///run/containerd/containerd.sock), or any CRI runtime. It is the
// kubelet's default backend: what the kubelet did is what `crictl pods`,
// `crictl ps`, `crictl logs` and `crictl inspectp` show on the node.
//
// # Contract
//
// The package keeps no state the runtime does not have: everything it
// needs back after a kubelet restart is in the CRI objects. Sandboxes
// carry the pod's metadata (name, namespace, uid, attempt), Kubernetes'
// io.kubernetes.pod.* labels plus the caller's, and the sandbox's whole
// runtime.SandboxConfig as the annotation runtime.tugboat.io/sandbox-config
// (the CRI status does not return hostname, cgroup parent, DNS or the /etc
// files, and CreateContainer must send the sandbox's config again).
// Containers carry io.kubernetes.container.name and the pod labels, plus
// their sandbox and image (runtime.tugboat.io/sandbox-id, image,
// image-id). Sandboxes and containers without them are someone else's and
// are not listed.
//
// Unlike the native backend, the runtime owns the pod network: in
// RunPodSandbox it makes the network namespace, starts the pause container
// (its sandbox_image) and runs the CNI plugins of its CNI config folder,
// where the kubelet writes its conflist; StopPodSandbox runs CNI DEL. So
// SandboxConfig.NetNSPath stays empty and SandboxStatus.IP (from
// PodSandboxStatus) is the pod's address. Failures are classified for the
// kubelet's layers: a CNI failure wraps runtime.ErrNetworkSetup (layer
// CNI, with the plugin's message), a missing pause image
// runtime.ErrSandboxImage; NetworkStatus reports the runtime's
// NetworkReady condition for the Node's NetworkPluginNotReady.
//
// Containers write the CRI log format (each line "<RFC3339Nano time>
// <stdout|stderr> <F|P> <text>", P for a partial line the runtime split)
// to ContainerConfig.LogPath, which must lie under the sandbox's
// LogDirectory; runtime.ReadLog reads it.
//
// Exec, Attach and PortForward ask the runtime for a streaming URL and
// speak Kubernetes' stream protocols to it over SPDY (stream.go); the
// kubelet relays the streams over its own tunnel, so they work behind NAT.
// Images are pulled through the ImageService (with the registry
// credentials of the pod's pull secrets in PullImage's AuthConfig) —
// mirrors and plain-HTTP lab registries are the runtime's configuration;
// ImportImage, which the CRI lacks, goes to containerd's own API on the
// same socket, into the namespace the CRI keeps its images in (k8s.io).
//
// Errors wrap the runtime package's sentinels, mapped from gRPC codes
// (NotFound, AlreadyExists, InvalidArgument, Unavailable) and, where
// containerd 1.6 answers Unknown, from its messages.
//
// # Versions
//
// Tested against Debian 12's containerd 1.6.20 and containerd 2.4.2 (the
// compose node image's), both with the config of package containerdconfig.
package cri
