package ha

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tugboat/tugboat/e2e/cluster"
)

// The binaries, built once by TestMain.
var (
	apiserverBin string
	tugctlBin    string
	// bins is e2e/cluster's set (nil when the machine cannot run a
	// cluster: the node tests skip, or fail under CI=true).
	bins *cluster.Binaries
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tugboat-ha-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mod, err := cluster.ModuleDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "./cmd/apiserver", "./cmd/tugctl")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	apiserverBin, tugctlBin = filepath.Join(dir, "apiserver"), filepath.Join(dir, "tugctl")
	if cluster.Check() == nil {
		if bins, err = cluster.BuildBinaries(ctx, dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cancel()
	return m.Run()
}
