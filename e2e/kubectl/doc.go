// Package kubectl tests the real kubectl against a node test cluster
// (e2e/cluster: the real apiserver, scheduler, controller-manager and
// kubelets on a private containerd) through the apiserver's Kubernetes
// HTTP API: logs -f, exec -it, port-forward, cp, drain and debug -it
// (with tugctl debug -i beside it), the commands that need a node. Run
// it as root under the host lock:
//
//	flock /tmp/tugboat-host.lock go test ./e2e/kubectl
package kubectl
