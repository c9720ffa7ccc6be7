package cluster_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tugboat/tugboat/e2e/cluster"
)

var bins *cluster.Binaries

func TestMain(m *testing.M) { os.Exit(cluster.TestMain(m, &bins)) }

// TestClusterUpAndDown starts a two-node cluster, checks both nodes are
// Ready with their own pod CIDRs, and that Close leaves nothing.
func TestClusterUpAndDown(t *testing.T) {
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitNodesReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		t.Logf("%s %s %s", n.Name, n.IP, n.PodCIDR)
	}
}
