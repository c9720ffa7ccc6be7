// Package services holds the end-to-end tests of Services on a three-node
// test cluster (e2e/cluster: network-namespace hosts, real containerd, CNI,
// kubelets, apiserver, scheduler and controller-manager): DNS from pods,
// ClusterIP balancing across nodes, endpoint removal, NodePort, rejection
// without endpoints, hairpin, Service deletion, proxy restart and
// `proxy --cleanup`. The proxy runs as its real binary on every host.
package services

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tugboat/tugboat/e2e/cluster"
)

var (
	bins     *cluster.Binaries
	proxyBin string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if cluster.Check() == nil {
		dir, err := os.MkdirTemp("", "tugboat-proxy-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		mod, err := cluster.ModuleDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/proxy")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ./cmd/proxy: %v\n%s", err, out)
			return 1
		}
		proxyBin = filepath.Join(dir, "proxy")
	}
	return cluster.TestMain(m, &bins)
}
