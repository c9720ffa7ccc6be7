package netlab

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// RequireRoot skips the test when the process is not root, with a message
// saying why, except under CI (CI=true), where a missing privilege is a
// failure: CI runs as root, so it never skips.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("netlab: needs root (network namespaces, veths, bridges); CI=true, so this is a failure and not a skip")
	}
	t.Skip("netlab: needs root (network namespaces, veths, bridges); skipping as non-root")
}

// NewForTest makes a lab for t and closes it when t ends. Unless set in
// cfg, the lab logs through t.Log and writes process output files to
// t.TempDir(). It calls RequireRoot first and fails t if the lab cannot be
// made.
func NewForTest(t testing.TB, cfg Config) *Lab {
	t.Helper()
	RequireRoot(t)
	var tw *testWriter
	if cfg.Logger == nil {
		tw = &testWriter{t: t}
		cfg.Logger = slog.New(slog.NewTextHandler(tw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if cfg.LogDir == "" {
		cfg.LogDir = t.TempDir()
	}
	lab, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("netlab: %v", err)
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("netlab: close: %v", err)
		}
		if tw != nil {
			tw.stop()
		}
	})
	return lab
}

// testWriter sends log lines to t.Log until the test's cleanup stops it
// (t.Log panics after the test has finished).
type testWriter struct {
	mu      sync.Mutex
	t       testing.TB
	stopped bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(string(trimNewline(p)))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}
