package pod

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// The files of configMap, secret, downwardAPI and projected volumes are
// written as Kubernetes' AtomicWriter writes them, so a container never
// sees a mix of old and new files:
//
//	<volume>/..2026_12_02_17_30_00.123456789/<the files, any depth>
//	<volume>/..data -> ..2026_12_02_17_30_00.123456789
//	<volume>/<first path element> -> ..data/<first path element>
//
// An update writes a new timestamped directory, points a fresh
// "..data_tmp" symlink at it and renames that over "..data" (one atomic
// step), then adds the visible symlinks of new paths, removes those of
// gone ones and removes the old directory. A payload equal to what
// "..data" holds (contents and modes) writes nothing. Names starting with
// ".." are the writer's own: validation refuses such paths.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// writeVolumeFiles makes dir show exactly payload (paths relative to
// dir, slash-separated); changed says whether it wrote.
func writeVolumeFiles(dir string, payload map[string]fileSpec) (changed bool, err error) {
	clean := make(map[string]fileSpec, len(payload))
	top := map[string]bool{}
	for p, f := range payload {
		c := path.Clean(p)
		if p == "" || path.IsAbs(c) || c == "." || strings.HasPrefix(c, "..") {
			return false, configErrorf("file path %q: must be relative, not start with '..' and stay inside the volume", p)
		}
		if _, dup := clean[c]; dup {
			return false, configErrorf("file path %q: conflicting duplicate paths", p)
		}
		clean[c] = f
		top[strings.SplitN(c, "/", 2)[0]] = true
	}
	for c := range clean {
		// "a" and "a/b" cannot both be files.
		for d := path.Dir(c); d != "."; d = path.Dir(d) {
			if _, ok := clean[d]; ok {
				return false, configErrorf("file path %q: %q is a file of the volume too", c, d)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	oldTS, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if oldTS != "" && dirHolds(filepath.Join(dir, oldTS), clean) && visibleLinksOK(dir, top) {
		return false, nil
	}
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, err
	}
	for c, f := range clean {
		p := filepath.Join(tsDir, filepath.FromSlash(c))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			os.RemoveAll(tsDir)
			return false, err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			os.RemoveAll(tsDir)
			return false, err
		}
		if err := os.Chmod(p, f.mode); err != nil { // not subject to the umask
			os.RemoveAll(tsDir)
			return false, err
		}
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmpLink); err != nil && !os.IsNotExist(err) {
		return false, err
	}
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return false, err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return false, err
	}
	// The visible paths: one symlink per first path element.
	for t := range top {
		p := filepath.Join(dir, t)
		want := filepath.Join(dataDirName, t)
		if have, err := os.Readlink(p); err == nil && have == want {
			continue
		}
		if err := os.RemoveAll(p); err != nil { // a file of the layout before the writer
			return true, err
		}
		if err := os.Symlink(want, p); err != nil {
			return true, err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true, err
	}
	for _, e := range entries {
		n := e.Name()
		stale := false
		if strings.HasPrefix(n, "..") {
			stale = n != dataDirName && n != filepath.Base(tsDir) // old data, or an interrupted write's
		} else {
			stale = !top[n]
		}
		if stale {
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				return true, fmt.Errorf("removing %s: %w", n, err)
			}
		}
	}
	return true, nil
}

// dirHolds reports whether dir's regular files are exactly want, with the
// same contents and modes.
func dirHolds(dir string, want map[string]fileSpec) bool {
	n := 0
	ok := true
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		f, found := want[filepath.ToSlash(rel)]
		fi, err := d.Info()
		if !found || err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != f.mode {
			ok = false
			return filepath.SkipAll
		}
		have, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(have, f.data) {
			ok = false
			return filepath.SkipAll
		}
		n++
		return nil
	})
	return err == nil && ok && n == len(want)
}

// visibleLinksOK reports whether dir's visible entries are exactly the
// symlinks of top.
func visibleLinksOK(dir string, top map[string]bool) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			if e.Name() != dataDirName && !strings.HasPrefix(e.Name(), "..2") {
				return false
			}
			continue
		}
		if !top[e.Name()] {
			return false
		}
		if have, err := os.Readlink(filepath.Join(dir, e.Name())); err != nil || have != filepath.Join(dataDirName, e.Name()) {
			return false
		}
		n++
	}
	return n == len(top)
}
