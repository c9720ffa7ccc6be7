// Package services holds the end-to-end tests of Services on a three-node
// test cluster (e2e/cluster: network-namespace hosts, real containerd, CNI,
// kubelets, apiserver, scheduler and controller-manager): DNS from pods,
// ClusterIP balancing across nodes, endpoint removal, NodePort, rejection
// without endpoints, hairpin, an Ingress across nodes, Service deletion, proxy restart and
// `proxy --cleanup`. The proxy runs as its real binary on every host.
package services

import (
	"os"
	"testing"

	"github.com/tugboat/tugboat/e2e/cluster"
)

var (
	bins     *cluster.Binaries
	proxyBin string
)

func TestMain(m *testing.M) {
	os.Exit(cluster.TestMainWith(m, &bins, map[string]*string{"proxy": &proxyBin}))
}
