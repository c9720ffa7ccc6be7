package imagedir

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

type fakeImporter struct{ got []string }

func (f *fakeImporter) ImportImage(_ context.Context, r io.Reader) ([]runtime.ImageStatus, error) {
	b, _ := io.ReadAll(r)
	f.got = append(f.got, string(b))
	if string(b) == "garbage" {
		return nil, errors.New("not a tar")
	}
	return []runtime.ImageStatus{{Ref: "tugboat.local/" + string(b) + ":latest"}}, nil
}

func TestScanImportsSettledTarballsOnce(t *testing.T) {
	dir := t.TempDir()
	imp := &fakeImporter{}
	woken := 0
	w := &Watcher{Dir: dir, Importer: imp, OnImport: func() { woken++ }, seen: map[string]fileVersion{}}
	os.MkdirAll(filepath.Join(dir, ".imported"), 0o755)
	write := func(name, data string, mtime time.Time) {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		os.Chtimes(p, mtime, mtime)
	}
	t0 := time.Now().Add(-time.Hour)
	write("app.tar", "app", t0)
	write("notes.txt", "ignored", t0)
	write("bad.tar", "garbage", t0)
	ctx := context.Background()

	w.Scan(ctx) // first look: not settled yet
	if len(imp.got) != 0 {
		t.Fatalf("imported on first sight: %v", imp.got)
	}
	w.Scan(ctx)
	if strings.Join(imp.got, ",") != "app,garbage" && strings.Join(imp.got, ",") != "garbage,app" {
		t.Fatalf("imported %v", imp.got)
	}
	if woken != 1 {
		t.Errorf("OnImport called %d times, want 1", woken)
	}
	w.Scan(ctx)
	if len(imp.got) != 2 {
		t.Fatalf("imported again: %v", imp.got)
	}
	// A restarted watcher remembers; a changed file is imported again.
	w2 := &Watcher{Dir: dir, Importer: imp, seen: map[string]fileVersion{}}
	w2.Scan(ctx)
	w2.Scan(ctx)
	if len(imp.got) != 2 {
		t.Fatalf("a restarted watcher imported again: %v", imp.got)
	}
	write("app.tar", "app2", t0.Add(time.Minute))
	w2.Scan(ctx)
	w2.Scan(ctx)
	if len(imp.got) != 3 || imp.got[2] != "app2" {
		t.Fatalf("changed file: %v", imp.got)
	}
}
