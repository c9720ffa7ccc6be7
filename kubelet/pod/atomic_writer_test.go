package pod

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readVolume(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		// Read through the visible symlinks, as a container does.
		filepath.WalkDir(filepath.Join(dir, e.Name())+"/", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
			return nil
		})
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			out[e.Name()] = string(b)
		}
	}
	return out
}

func TestAtomicWriterLayoutAndUpdates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	changed, err := writeVolumeFiles(dir, map[string]fileSpec{
		"a":       {[]byte("1"), 0o644},
		"sub/b":   {[]byte("2"), 0o400},
		"sub/c/d": {[]byte("3"), 0o600},
	})
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, err %v", changed, err)
	}
	ts, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(ts, "..2") {
		t.Fatalf("..data -> %q (%v), want a timestamped directory", ts, err)
	}
	for _, name := range []string{"a", "sub"} {
		if l, err := os.Readlink(filepath.Join(dir, name)); err != nil || l != "..data/"+name {
			t.Errorf("%s -> %q (%v), want ..data/%s", name, l, err, name)
		}
	}
	if got := readVolume(t, dir); len(got) != 3 || got["a"] != "1" || got["sub/b"] != "2" || got["sub/c/d"] != "3" {
		t.Errorf("files %v", got)
	}
	for p, want := range map[string]fs.FileMode{"a": 0o644, "sub/b": 0o400, "sub/c/d": 0o600} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}

	// The same payload writes nothing.
	changed, err = writeVolumeFiles(dir, map[string]fileSpec{
		"a": {[]byte("1"), 0o644}, "sub/b": {[]byte("2"), 0o400}, "sub/c/d": {[]byte("3"), 0o600},
	})
	if err != nil || changed {
		t.Fatalf("same payload: changed %v, err %v", changed, err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != ts {
		t.Errorf("..data moved to %q on an unchanged payload", again)
	}

	// A change (one content, one mode, a key gone, a key new) swaps
	// ..data to a new directory and removes the old one.
	changed, err = writeVolumeFiles(dir, map[string]fileSpec{
		"a":   {[]byte("1'"), 0o644},
		"new": {[]byte("4"), 0o640},
	})
	if err != nil || !changed {
		t.Fatalf("update: changed %v, err %v", changed, err)
	}
	ts2, _ := os.Readlink(filepath.Join(dir, "..data"))
	if ts2 == ts {
		t.Fatal("..data still points at the old directory")
	}
	if _, err := os.Lstat(filepath.Join(dir, ts)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old data directory %s not removed (%v)", ts, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the gone path's symlink is still there (%v)", err)
	}
	if got := readVolume(t, dir); len(got) != 2 || got["a"] != "1'" || got["new"] != "4" {
		t.Errorf("files after update %v", got)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 4 { // ..<ts>, ..data, a, new
		t.Errorf("volume holds %v, want the data dir, ..data, a and new", names)
	}
}

func TestAtomicWriterReplacesPlainFiles(t *testing.T) {
	// A volume written before the atomic writer: plain files.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "k"), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(dir, "gone"), []byte("old"), 0o644)
	if _, err := writeVolumeFiles(dir, map[string]fileSpec{"k": {[]byte("new"), 0o644}}); err != nil {
		t.Fatal(err)
	}
	if got := readVolume(t, dir); len(got) != 1 || got["k"] != "new" {
		t.Errorf("files %v", got)
	}
}

func TestAtomicWriterRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"/abs", "../up", "..data", "a/../../b", ""} {
		if _, err := writeVolumeFiles(t.TempDir(), map[string]fileSpec{p: {nil, 0o644}}); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	if _, err := writeVolumeFiles(t.TempDir(), map[string]fileSpec{"a": {nil, 0o644}, "a/b": {nil, 0o644}}); err == nil {
		t.Error("a file and a directory of the same path accepted")
	}
}
