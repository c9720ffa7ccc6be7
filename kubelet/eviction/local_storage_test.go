package eviction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestDiskUsage: du's count (allocated blocks, a hard link once), and the
// walk stops once past the limit.
func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	if used, err := diskUsage(filepath.Join(dir, "missing"), 0); used != 0 || err != nil {
		t.Fatalf("missing dir: %d, %v", used, err)
	}
	empty, err := diskUsage(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", "sub/b"} {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "a-link")); err != nil {
		t.Fatal(err)
	}
	// A sparse file uses (almost) nothing.
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	used, err := diskUsage(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if files := used - empty; files < 2<<20 || files > 2<<20+64<<10 {
		t.Errorf("usage of two 1Mi files (one hard-linked twice) and a sparse one: %d bytes above the empty dir's %d", files, empty)
	}
	if stopped, err := diskUsage(dir, 512<<10); err != nil || stopped <= 512<<10 || stopped >= used {
		t.Errorf("walk stopping above 512Ki: %d, %v (full: %d)", stopped, err, used)
	}
}

// TestLocalStorageEviction: a pod whose emptyDir is over its sizeLimit is
// evicted with Kubernetes' message, whatever the node's pressure; one
// under its limit, without a limit, or already terminal is not.
func TestLocalStorageEviction(t *testing.T) {
	root := t.TempDir()
	path := func(uid, vol string) string { return filepath.Join(root, uid, vol) }
	write := func(uid, vol string, n int) {
		if err := os.MkdirAll(path(uid, vol), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path(uid, vol), "f"), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	withVolume := func(p *v1.Pod, vol, limit string) *v1.Pod {
		p.Spec.Volumes = append(p.Spec.Volumes, &v1.Volume{Name: vol, EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: limit}})
		return p
	}
	over := withVolume(withVolume(pod("over", Guaranteed, 0, 1), "small", "10Mi"), "scratch", "1Mi")
	under := withVolume(pod("under", BestEffort, 0, 1), "scratch", "4Mi")
	unlimited := withVolume(pod("unlimited", BestEffort, 0, 1), "scratch", "")
	done := withVolume(pod("done", BestEffort, 0, 1), "scratch", "1Mi")
	done.Status.Phase = "Succeeded"
	write("over", "small", 1<<20)
	write("over", "scratch", 2<<20)
	write("under", "scratch", 2<<20)
	write("unlimited", "scratch", 8<<20)
	write("done", "scratch", 2<<20)

	ts, _ := ParseThresholds(DefaultEvictionHard)
	ev := &fakeEvictor{}
	m, err := New(Config{Thresholds: ts, Evictor: ev, EmptyDirPath: path,
		Pods:    func() []*v1.Pod { return []*v1.Pod{under, over, unlimited, done} },
		Observe: func() map[string]Observation { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	m.Synchronize(context.Background())
	m.Synchronize(context.Background()) // asked once while it stops
	if fmt.Sprint(ev.evicted) != "[over]" {
		t.Fatalf("evicted %v, want [over]", ev.evicted)
	}
	if want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `; ev.msgs[0] != want {
		t.Errorf("message %q, want %q", ev.msgs[0], want)
	}
	if p, _ := m.DiskPressure(); p {
		t.Error("a pod's sizeLimit is not node pressure")
	}
	if got := testutil.ToFloat64(m.evictions.WithLabelValues(SignalEmptyDirFsLimit)); got != 1 {
		t.Errorf("evictions{signal=%q} = %v, want 1", SignalEmptyDirFsLimit, got)
	}
}
