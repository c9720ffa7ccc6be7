package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tugboat/tugboat/e2e/cluster"
)

var (
	bins *cluster.Binaries
	// proxyBin and tugctlBin are built next to the cluster's binaries.
	proxyBin, tugctlBin string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if cluster.Check() == nil {
		dir, err := os.MkdirTemp("", "tugboat-faults-bin")
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
		cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/proxy", "./cmd/tugctl")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ./cmd/proxy ./cmd/tugctl: %v\n%s", err, out)
			return 1
		}
		proxyBin, tugctlBin = filepath.Join(dir, "proxy"), filepath.Join(dir, "tugctl")
	}
	return cluster.TestMain(m, &bins)
}
