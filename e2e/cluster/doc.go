// Package cluster runs a Tugboat test cluster on one machine, as a lab of
// Linux VMs on one subnet would: N "hosts" as network namespaces on one
// bridge (e2e/netlab: the bridge lives in a switch namespace of its own,
// so the host's firewall neither breaks the cluster nor is touched by it),
// each with its own kubelet process and node IP, all sharing one private
// containerd (own root, state and socket under the run directory; each
// node in its own containerd namespace and cgroup root, so nodes see only
// their own images and containers), the real apiserver process with its
// embedded etcd listening on the lab's root address, and the scheduler and
// controller-manager when cmd/ has them (otherwise tests bind pods by
// setting spec.nodeName).
//
// The binaries are the real ones, built once per test binary
// (BuildBinaries, or TestMain). Kubelets get short intervals and
// back-offs (1 s lease and status, 1 s..8 s back-offs) and a pod CIDR each
// from a cluster CIDR unique to the run (10.200-239.0.0/16), so
// RouteFromRoot can route a node's pods from the test process.
//
// Cleanup: Close stops the kubelets, containerd (killing every container),
// the control plane and the lab, unmounts and removes the run directory
// (<base>/<run id>) and the run's cgroups (/tugboat-e2e/<run id>). A run
// holds an flock on <run dir>/lock for its life; New (and
// hack/test-cluster.sh) first removes the runs whose lock is free — what a
// killed test left: shims and container processes, mounts, directories,
// cgroups — and netlab removes their namespaces.
package cluster
