// Package imagedir imports the image tarballs dropped into a node's import
// folder (<root-dir>/images/*.tar, OCI layout or docker-archive), for
// air-gapped nodes: copy a tarball there and pods waiting for the image
// start.
//
// Loop: every Interval the folder is listed. A .tar file whose size and
// modification time held still since the previous look (so a file still
// being copied is not read) and that was not imported in that version is
// imported; the result is remembered in <dir>/.imported/<name> (size and
// mtime), so a restarted kubelet does not import it again. Success is a
// Normal ImageImported event on the Node and wakes the pods (OnImport);
// failure is a Warning ImageImportFailed event, retried only when the file
// changes.
package imagedir

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// DefaultInterval is how often the folder is looked at.
const DefaultInterval = 2 * time.Second

// Importer imports an image tarball; runtime.Runtime satisfies it.
type Importer interface {
	ImportImage(ctx context.Context, r io.Reader) ([]runtime.ImageStatus, error)
}

// Recorder records Events; record.Recorder satisfies it.
type Recorder interface {
	Eventf(obj v1.Object, typ, reason, format string, args ...any)
}

// Watcher imports the tarballs of one folder.
type Watcher struct {
	// Dir is the import folder (created if missing).
	Dir      string
	Importer Importer
	// Node is the object events are recorded on (may be nil).
	Node     func() *v1.Node
	Recorder Recorder
	// OnImport is called after a successful import.
	OnImport func()
	Interval time.Duration
	Logger   *slog.Logger

	seen map[string]fileVersion // what the previous look found
}

type fileVersion struct {
	size  int64
	mtime int64
}

func (v fileVersion) String() string { return fmt.Sprintf("%d %d", v.size, v.mtime) }

// Run watches until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	if w.Interval <= 0 {
		w.Interval = DefaultInterval
	}
	if err := os.MkdirAll(filepath.Join(w.Dir, ".imported"), 0o755); err != nil {
		return fmt.Errorf("image import folder: %w", err)
	}
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		w.Scan(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Scan looks at the folder once.
func (w *Watcher) Scan(ctx context.Context) {
	if w.seen == nil {
		w.seen = map[string]fileVersion{}
	}
	entries, err := os.ReadDir(w.Dir)
	if err != nil {
		w.log().Warn("reading the image import folder", "dir", w.Dir, "err", err)
		return
	}
	now := map[string]fileVersion{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".tar") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		v := fileVersion{fi.Size(), fi.ModTime().UnixNano()}
		now[e.Name()] = v
		if w.seen[e.Name()] != v {
			continue // new or still changing: look again next time
		}
		if w.done(e.Name()) == v.String() {
			continue
		}
		w.importFile(ctx, e.Name(), v)
	}
	w.seen = now
}

func (w *Watcher) marker(name string) string { return filepath.Join(w.Dir, ".imported", name) }

func (w *Watcher) done(name string) string {
	b, _ := os.ReadFile(w.marker(name))
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

func (w *Watcher) importFile(ctx context.Context, name string, v fileVersion) {
	path := filepath.Join(w.Dir, name)
	start := time.Now()
	imgs, err := w.importPath(ctx, path)
	if ctx.Err() != nil {
		return
	}
	// Remember the version either way: a broken file is retried only once
	// it changes.
	result := "ok"
	if err != nil {
		result = "error: " + err.Error()
	}
	_ = os.WriteFile(w.marker(name), []byte(v.String()+"\n"+result+"\n"), 0o644)
	node := w.node()
	if err != nil {
		w.log().Warn("importing image tarball", "file", path, "err", err)
		if node != nil && w.Recorder != nil {
			w.Recorder.Eventf(node, "Warning", "ImageImportFailed", "importing %s: %v", path, err)
		}
		return
	}
	refs := make([]string, len(imgs))
	for i, img := range imgs {
		refs[i] = img.Ref
	}
	w.log().Info("imported image tarball", "file", path, "images", refs, "took", time.Since(start).Round(time.Millisecond))
	if node != nil && w.Recorder != nil {
		w.Recorder.Eventf(node, "Normal", "ImageImported", "imported %s from %s", strings.Join(refs, ", "), path)
	}
	if w.OnImport != nil {
		w.OnImport()
	}
}

func (w *Watcher) importPath(ctx context.Context, path string) ([]runtime.ImageStatus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return w.Importer.ImportImage(ctx, f)
}

func (w *Watcher) log() *slog.Logger {
	if w.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Logger
}

func (w *Watcher) node() *v1.Node {
	if w.Node == nil {
		return nil
	}
	return w.Node()
}
