package netlab

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/internal/netns"
)

// Prefixes that keep the stale-cleanup tests' labs apart from each other's
// and the other tests' (whose New would otherwise clean up the simulated
// stale runs first).
const (
	stalePrefix  = "tbst-"
	manualPrefix = "tbsm-"
)

func TestCleanupStaleRemovesKilledRun(t *testing.T) {
	t.Parallel()
	busybox(t)
	live := NewForTest(t, Config{Prefix: stalePrefix, Hosts: 1})
	ctx := t.Context()

	// A process that made a lab, and left a daemon in it, dies by SIGKILL.
	name := randomName(6)
	id := stalePrefix + name
	helper, daemon := startStaleHelper(t, name)
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	before := leftovers(t, id)
	for _, want := range []string{"netns " + id + "-sw", "netns " + id + "-h1", "netns " + id + "-h2", "link " + id + "-rt"} {
		if !slices.Contains(before, want) {
			t.Fatalf("killed run left %v, want %s among them", before, want)
		}
	}

	logger := slog.New(slog.NewTextHandler(&testWriter{t: t}, nil))
	removed, err := CleanupStale(ctx, stalePrefix, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed %v", removed)
	if got := leftovers(t, id); len(got) > 0 {
		t.Errorf("after CleanupStale: %v", got)
	}
	if err := wait.Until(ctx, waitFor, func(context.Context) error { return processGone(daemon) }); err != nil {
		t.Errorf("daemon left in the stale lab: %v", err)
	}
	// The live lab of this process is untouched.
	for _, r := range removed {
		if strings.HasPrefix(r, live.ID+"-") {
			t.Errorf("removed %s of a live lab", r)
		}
	}
	if !netns.IsPinned(live.Hosts[0].NetnsPath) {
		t.Errorf("live lab's %s is gone", live.Hosts[0].NetnsPath)
	}
	if _, err := os.Stat(runLockPath(live.ID)); err != nil {
		t.Errorf("live lab's lock: %v", err)
	}
}

func TestCleanupStaleLeavesManualLab(t *testing.T) {
	t.Parallel()
	RequireRoot(t)
	// hack/netlab.sh marks its labs; an orphan namespace with the marker
	// must survive, one without it must not.
	id := manualPrefix + "man" + randomName(3)
	orphan := manualPrefix + "orp" + randomName(3)
	for _, n := range []string{id + "-sw", orphan + "-sw"} {
		h, err := createNamedNetns(n)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		t.Cleanup(func() { _ = deleteNamedNetns(n) })
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manualPath(id), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(manualPath(id)) })

	removed, err := CleanupStale(t.Context(), manualPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(removed, id+"-sw") || !netns.IsPinned(netnsPath(id+"-sw")) {
		t.Errorf("removed the manual lab's netns (removed %v)", removed)
	}
	if !slices.Contains(removed, orphan+"-sw") || len(leftovers(t, orphan)) > 0 {
		t.Errorf("orphan netns not removed (removed %v, left %v)", removed, leftovers(t, orphan))
	}
}
