// Package runtime is the kubelet's view of a container runtime: a CRI-shaped
// interface ([Runtime]) with its own small config and status types, plus the
// runtime-independent pieces every implementation shares (the per-pod /etc
// files, container log reading and rotation, and [Instrument], which times
// and counts every call for /metrics).
//
// The package has no dependency on the API types: the kubelet's pod workers
// translate a Pod into [SandboxConfig] and [ContainerConfig] values and read
// [SandboxStatus] and [ContainerStatus] back.
//
// # Sandboxes
//
// Tugboat has no pause container. A pod sandbox is
//
//   - a network namespace, made and configured by the caller (package
//     kubelet/network) before RunPodSandbox and named in
//     [SandboxConfig.NetNSPath]; the runtime never creates, configures or
//     removes it;
//   - the per-pod /etc/hosts, /etc/hostname and /etc/resolv.conf files, also
//     prepared by the caller ([WriteEtcFiles]) and bind-mounted into every
//     container of the sandbox;
//   - a cgroup parent under which the containers' cgroups are placed;
//   - metadata the runtime persists so that a restarted kubelet can find the
//     sandbox again: the containerd implementation stores it as a containerd
//     container record with no task and no snapshot, labelled
//     runtime.tugboat.io/kind=sandbox.
//
// Containers join the sandbox's network namespace by path and use its
// hostname, so all containers of a pod share one IP, as in Kubernetes.
//
// A sandbox is Ready from RunPodSandbox until StopPodSandbox, which stops all
// its containers; RemovePodSandbox then removes the containers and the
// record. The caller runs CNI DEL and removes the network namespace between
// the two (see kubelet/network).
//
// # Containers
//
// Containers carry labels naming their sandbox, pod (namespace, name, uid),
// container name and attempt, so a restarted kubelet adopts running
// containers through ListContainers instead of restarting them. The exit
// status of a container is kept after it exits (ContainerExited, with exit
// code, finish time and reason: Completed, Error or OOMKilled) until
// RemoveContainer.
//
// Container output (stdout and stderr, interleaved) is written by the runtime
// straight to [ContainerConfig.LogPath], a file outside the runtime's
// control that survives kubelet restarts; [ReadLog] reads and follows it and
// [RotateLog] / [LogRotator] rotate it by size (copy and truncate).
//
// # Errors
//
// Methods return errors that wrap the sentinels in errors.go (test with
// errors.Is): ErrNotFound for an unknown sandbox, container or image,
// ErrImageNotPresent when a container's image is not on the node,
// ErrImagePull when a registry pull fails, ErrUnavailable when the runtime
// daemon cannot be reached, and so on. Every method is safe for concurrent
// use; calls for one container or sandbox are expected to be serialised by
// the caller (one pod worker per pod).
package runtime
