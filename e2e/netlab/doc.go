// Package netlab builds a multi-host network lab on one Linux machine for
// Tugboat's end-to-end tests: N "hosts" as network namespaces on one bridge,
// the same shape as a lab of Linux VMs on one subnet.
//
// # Layout
//
// For a lab whose run id is tb-abc123 (Config.Prefix "tb-" + Config.Name
// "abc123") on the subnet 10.123.0.0/24:
//
//	root namespace (the test runner)
//	  tb-abc123-rt  10.123.0.1/24   veth into the switch; the only thing
//	                                netlab adds to the root namespace
//	netns tb-abc123-sw  ("switch")
//	  br0           bridge, no address
//	  rt            peer of tb-abc123-rt, port of br0
//	  h1 .. hN      peers of the hosts' eth0, ports of br0
//	netns tb-abc123-h1 .. -hN  ("hosts")
//	  lo            up
//	  eth0          10.123.0.11/24, 10.123.0.12/24, ...
//	  ip_forward=1  (so the host can route to its pods)
//
// The bridge lives in a namespace of its own, so host-to-host traffic is
// bridged where the host's firewall cannot see it: Docker's iptables FORWARD
// policy DROP in the root namespace neither breaks the lab nor is changed by
// it. The hosts have no default route: traffic to anything outside the lab
// subnet (and routes that Tugboat itself installs, such as pod CIDRs via other
// hosts) fails with "network unreachable" instead of leaving the machine.
//
// In the root namespace netlab adds exactly one interface, tb-<run>-rt, with
// the lab's first address (Lab.RootIP) and so the connected route to the lab
// subnet; no default route and none of the host's real interfaces are
// touched. Forwarding is switched off on that interface (conf.<if>.forwarding
// = 0), so nothing the hosts send is ever routed on by the root namespace, and
// IPv6 is disabled on it. Lab.RouteFromRoot adds, on request, a route from
// the root namespace to a pod CIDR through one host; it is bound to the lab
// interface and disappears with it.
//
// # The API server
//
// Processes of the test runner (the apiserver, etcd) run in the root
// namespace. The hosts reach the root namespace at Lab.RootIP, so the
// apiserver listens on Lab.RootIP (or on 0.0.0.0) and kubelets are given
// https://<RootIP>:<port>. A loopback address would not do: 127.0.0.1 inside
// a host namespace is that host's own loopback. Tests in the root namespace
// reach the same address, and reach every host at Host.IP.
//
// # Processes in a host
//
// Host.Start and Host.Run fork the process from an OS thread that has
// entered the host's network namespace with setns(2) and returns to the root
// namespace right after the fork. That thread is one per lab, locked to a
// goroutine of its own for the lab's life (see spawner: a child's
// parent-death signal is tied to the thread that forked it). The process
// changes only its network namespace: it keeps the root mount namespace, so
// every host shares the file system, /run/netns (the kubelet's pod network
// namespaces are visible to containerd) and one containerd socket. "ip netns
// exec" was not used because it also unshares the mount namespace and
// remounts /sys: mounts a kubelet makes there (pod netns bind mounts) would
// not be seen by a containerd in the root mount namespace. One consequence:
// /sys/class/net inside a host process shows the root namespace's
// interfaces; use netlink (as the CNI plugins do) to look at the host's own.
//
// Each process leads a process group of its own, so Host.Stop and Lab.Close
// kill the process and every child it forked (CNI plugins, shells) by process
// group id, then wait for it. Processes also get SIGKILL as their parent
// death signal, so a killed test run does not leave kubelets behind.
//
// # Cleanup after a killed run
//
// Every name carries the lab's prefix and run id: network namespaces
// <prefix><name>-sw / -h<i>, the root link <prefix><name>-rt. A running lab
// holds an flock on /run/tugboat-netlab/<prefix><name>.lock for its whole
// life; the kernel drops it when the process dies, however it dies.
// CleanupStale (also run by New) removes the namespaces, links and processes
// of every run with the prefix whose lock is free, and leaves running labs of
// other test processes alone, so test packages may make labs concurrently.
// Labs made by hack/netlab.sh carry a ".manual" marker instead and are left
// to "hack/netlab.sh down".
package netlab
