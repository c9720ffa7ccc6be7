// Package install tests the two ways Tugboat is installed on Linux hosts,
// end to end, on one machine:
//
//   - TestInstallScript runs hack/install.sh's steps (control-plane, then
//     join-command and worker per worker, with --no-systemd and
//     --skip-packages) for three network-namespace hosts of an e2e/netlab
//     lab — the layout of a lab of Linux VMs on one subnet — and starts
//     each component exactly as its systemd unit would: the installed
//     binary with the ARGS of its env file. Workers join with one-time
//     tokens.
//   - TestInstallThreeServers installs a highly available control plane
//     (control-plane --etcd cluster on the first server, --join-bundle on
//     two more, each host running install.sh itself) and one worker, and
//     kills the etcd leader's server (its etcd member and apiserver): the
//     cluster still serves through the other two, with nothing lost.
//   - TestInstallFlags checks install.sh's errors for bad options.
//   - TestAllInOne runs `tugboat up` (cmd/tugboat) in one host.
//
// Both then run the quick-start workload (deploy/examples/web.yaml): the
// Deployment becomes available, the NodePort answers from every node with
// pods of every node, and `tugctl logs` works.
//
// The hosts share the machine's file system, so each gets its own prefix,
// etc and data folders under the run directory, and the kubelets share one
// private containerd (kubelet/runtime/containerd/containerdtest), each in
// its own containerd namespace and cgroup. Runs follow e2e/cluster's
// layout (a locked run directory under cluster.DefaultBaseDir, cgroups
// under /tugboat-e2e/<run id>), so cluster.CleanupStale removes what a
// killed run left, and live runs of either package are left alone.
//
// The tests need root, containerd, runc, the CNI plugins and iptables
// (hack/install-deps.sh); they skip without them, except under CI=true.
package install
