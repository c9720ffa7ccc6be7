// Package localup tests that `make local-up` then `make local-down` (the
// same script, hack/local-up.sh) leave nothing behind on the host: no file,
// link, address, route, nftables table or chain, mount, cgroup, network
// namespace or containerd runtime state. It runs the real script with the
// real binaries as root, with a pod (hostPort, a memory-backed emptyDir)
// and a Service, so the kubelet, the CNI plugins and the proxy have made
// all they make.
//
// Isolation: `go test ./...` runs other packages' tests at the same time,
// so the script runs inside a network namespace host of its own
// (e2e/netlab): its links, tables, routes, cluster DNS address and ports
// are its own and collide with nobody's, and nothing it does to the network
// reaches the root namespace. Everything else is the host's: the file
// system, the mount namespace, the cgroups. There the names are unique to
// the run (state dir, node name, containerd namespace, cgroup root), and
// the comparison looks at those, plus the defaults local-up must not touch
// (/etc/cni/net.d, the /tugboat cgroup, /run/netns).
//
// It needs root, containerd, runc, the CNI plugins, iptables, nftables,
// curl and busybox (hack/install-deps.sh); without them it skips saying
// which is missing, and fails under CI=true.
package localup
