package cluster

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/internal/syncbuf"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
)

// TestMain builds the binaries for a test package's clusters into a temp
// dir (removed afterwards) and runs the tests. When the machine cannot run
// a cluster (Check), *bins stays nil and NewForTest skips each test with
// the reason (fails it under CI=true). Use it as
//
//	var bins *cluster.Binaries
//	func TestMain(m *testing.M) { os.Exit(cluster.TestMain(m, &bins)) }
func TestMain(m *testing.M, bins **Binaries) int { return TestMainWith(m, bins, nil) }

// TestMainWith is TestMain that also builds the commands a package drives
// itself: for each name in extra, ./cmd/<name> into the same dir, its path
// set in *extra[name] ("" when the machine cannot run a cluster).
func TestMainWith(m *testing.M, bins **Binaries, extra map[string]*string) int {
	if Check() != nil {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "tugboat-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if len(extra) > 0 {
		mod, err := ModuleDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		var pkgs []string
		for name, path := range extra {
			pkgs = append(pkgs, "./cmd/"+name)
			*path = filepath.Join(dir, name)
		}
		if err := goBuild(ctx, mod, dir, pkgs...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	b, err := BuildBinaries(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cancel()
	*bins = b
	return m.Run()
}

// NewForTest starts a cluster for t (Options.Binaries from TestMain) and
// closes it when t ends, first printing the tail of every log if t failed.
func NewForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if err := Check(); err != nil {
		containerdtest.SkipOrFail(t, fmt.Errorf("%w (install with hack/install-deps.sh)", err))
	}
	if opts.Binaries == nil {
		t.Fatal("cluster: no binaries (call cluster.TestMain from TestMain)")
	}
	if opts.LogDir == "" {
		opts.LogDir = t.TempDir()
	}
	tw := &testWriter{t: t}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(tw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := New(ctx, opts)
	if err != nil {
		dumpLogs(t, opts.LogDir)
		t.Fatalf("cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(t, c.LogDir)
		}
		if err := c.Close(); err != nil {
			t.Errorf("cluster: close: %v", err)
		}
		tw.stop()
	})
	return c
}

// dumpLogs prints the last lines of every log in dir.
func dumpLogs(t testing.TB, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		t.Logf("==== last lines of %s ====\n%s", filepath.Base(f), tail(f, 60))
	}
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// testWriter sends log lines to t.Log until stopped.
type testWriter struct {
	mu      sync.Mutex
	t       testing.TB
	stopped bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// Output collects a running command's output (its Stdout and Stderr) so
// that a test may read it while the command still writes.
type Output = syncbuf.Buffer
