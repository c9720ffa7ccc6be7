package faults

import (
	"os"
	"testing"

	"github.com/tugboat/tugboat/e2e/cluster"
)

var (
	bins *cluster.Binaries
	// proxyBin and tugctlBin are built next to the cluster's binaries.
	proxyBin, tugctlBin string
)

func TestMain(m *testing.M) {
	os.Exit(cluster.TestMainWith(m, &bins, map[string]*string{"proxy": &proxyBin, "tugctl": &tugctlBin}))
}
