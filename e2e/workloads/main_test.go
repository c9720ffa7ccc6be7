package workloads

import (
	"os"
	"testing"

	"github.com/tugboat/tugboat/e2e/cluster"
)

var (
	bins *cluster.Binaries
	// tugctlBin is built next to the cluster's binaries.
	tugctlBin string
)

func TestMain(m *testing.M) {
	os.Exit(cluster.TestMainWith(m, &bins, map[string]*string{"tugctl": &tugctlBin}))
}
