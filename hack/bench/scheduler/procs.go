package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	procfs "github.com/tugboat/tugboat/hack/bench/internal/proc"
)

// build compiles the two binaries into dir.
func build(ctx context.Context, dir string) error {
	for _, b := range []string{"apiserver", "scheduler"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, b), "./cmd/"+b)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/%s (run from the repository root): %w", b, err)
		}
	}
	return nil
}

// proc is a child process.
type proc = procfs.Child

func start(name, bin, logPath string, env []string, args ...string) (*proc, error) {
	return procfs.Start(name, bin, logPath, env, args...)
}

// stopGrace is how long a component gets to stop before it is killed.
const stopGrace = 10 * time.Second

// memory returns p's VmRSS and VmHWM (peak) in MiB.
func memory(p *proc) (rss, peak float64, err error) {
	r, h, err := procfs.Memory(p.Pid())
	return float64(r) / (1 << 20), float64(h) / (1 << 20), err
}
