// Package hollow is the kubelet's simulation backend (`--runtime hollow`):
// an in-memory implementation of runtime.Runtime with no processes, no
// containerd, no CNI, no network namespaces, no cgroups and no files. It
// is what a hollow node runs (package kubelet/hollow, hack/hollow): the
// real kubelet — registration, Lease, node status, its watch of its pods,
// the per-pod state machine, probes, restarts — over a runtime whose pods
// start at once, so that thousands of nodes fit in one process and put on
// the control plane the traffic real nodes put on it. It is not a test
// double: its behaviour is fixed and documented here, and it refuses what
// it does not simulate.
//
// # Sandboxes
//
// RunPodSandbox records a Ready sandbox and, unless HostNetwork, gives it
// the next free address of the node's pod CIDR, as a CRI runtime's CNI
// plugins would (SetPodCIDR, CRI's UpdateRuntimeConfig; the network,
// first (the bridge's gateway) and broadcast addresses are never handed
// out). Until the CIDR is set, or when it is exhausted, RunPodSandbox
// fails with runtime.ErrNetworkSetup. StopPodSandbox stops the containers
// and releases the address (CNI DEL); PodSandboxStatus reports it while
// the sandbox is Ready.
//
// # Containers
//
// A container starts the moment StartContainer is called and runs until
// it is stopped, except for the few commands whose outcome is known
// without running them: a command line (Command then Args) of exactly
// "true" exits 0 at once, "false" exits 1, and "sh -c 'exit N'" (or
// /bin/sh) exits N. That is enough for the kubelet's restart policies and
// crash back-off to be exercised. StopContainer ends a running container
// at once with exit code 137 (killed), whatever the grace period. Nothing
// is written to LogPath: a hollow container has no output.
//
// Exec runs nothing: it returns the exit code the same rule gives the
// command (0 for anything else), with no output, so exec probes succeed
// unless they run "false" or an "exit N". Network probes (httpGet,
// tcpSocket, grpc) are answered by NetworkProbe, which sends no packet:
// a hollow pod answers on every port.
//
// ContainerStats reports zero usage for a running container.
//
// # Images
//
// The images of Config.Images are present on every node; the slice is
// shared, not copied, so thousands of nodes hold it once. EnsureImage
// "pulls" any valid reference at once, with no registry traffic, and
// keeps it in the node's own list; RemoveImage forgets a pulled one (a
// Config image stays). ImportImage is refused (ErrInvalid): there is no
// image content to import.
//
// Everything is lost with the process: a restarted hollow node finds no
// sandboxes, as a rebooted machine would.
package hollow
