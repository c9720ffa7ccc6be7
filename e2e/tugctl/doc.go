// Package tugctl tests the tugctl binary against a node test cluster
// (e2e/cluster: the real apiserver, scheduler, controller-manager and
// kubelets on a private containerd) for the commands that need a node:
// cp (tar over exec), port-forward, logs with its options, and attach
// and run -i/--rm where the node's runtime backend can attach. Each
// assertion is on the bytes received or the stored object. Run it as
// root under the host lock:
//
//	flock /tmp/tugboat-host.lock go test ./e2e/tugctl
package tugctl
