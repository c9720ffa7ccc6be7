// Package kubelet holds the kubelet's node-level tests: each runs the real
// binaries (apiserver with etcd, kubelets; the scheduler and
// controller-manager where a test needs them) on real containerd, runc and
// CNI plugins in a test cluster (e2e/cluster), and drives them only through
// the API and the node's runtime, as a user would: pods served from their
// IP, crash loops and probes, logs and exec through the apiserver, image
// import, adoption of running containers by a restarted kubelet, a
// containerd restart, a simulated reboot, a broken CNI config, and the
// leftovers 50 deleted pods must not leave.
//
// They live under e2e/ and not beside the kubelet's code because they need
// a whole cluster: the harness (e2e/cluster) builds on the kubelet's own
// test helpers (kubelet/network/networktest,
// kubelet/runtime/containerd/containerdtest), so the folders point one
// way, e2e to kubelet, never back. The kubelet's own packages test with
// their own helpers and the apiserver's test server.
//
// They need root, containerd, runc and the CNI plugins
// (hack/install-deps.sh); without them they skip with that hint, and fail
// under CI=true.
package kubelet
