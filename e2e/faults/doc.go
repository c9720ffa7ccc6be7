// Package faults is the end-to-end fault catalogue: on one three-node test
// cluster (e2e/cluster, with the proxy on every node and the apiserver's
// --event-ttl short), one case per fault, each asserting that `tugctl
// trace` or `tugctl describe` (read through trace's -o json where it
// exists) names the layer and the reason, and that a metric of the
// component at fault counts it: unschedulable pods (insufficient cpu, a
// nodeSelector no node has), an image not on the node, a crash loop, a
// failing liveness probe, a failing readiness probe (Ready False, no
// endpoint), a Service whose selector matches no pod, a Service whose
// targetPort nothing listens on (the nodes' connections are refused by
// the endpoints themselves), a DNS name with a
// typo (NXDOMAIN), CNI broken on one node, a node whose kubelet stopped
// (NotReady, its pods evicted and replaced), and disk pressure on a node
// (best-effort pods evicted first). Also: `tugctl get
// events -w` streams new events, events older than the TTL disappear, and
// a crash-looping pod's BackOff events are one aggregated line.
//
// The tests run the real binaries (apiserver, scheduler,
// controller-manager, kubelets, proxies and tugctl) and need root,
// containerd, runc and the CNI plugins (hack/install-deps.sh).
package faults
