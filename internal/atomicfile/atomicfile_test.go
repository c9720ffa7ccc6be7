package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWithMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hosts")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, strings.NewReader("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "new\n" {
		t.Fatalf("content %q, %v; want %q", got, err, "new\n")
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	assertOnly(t, dir, "hosts")
}

// failingReader yields some bytes, then an error.
type failingReader struct{ sent bool }

var errBroken = errors.New("source broke")

func (f *failingReader) Read(b []byte) (int, error) {
	if f.sent {
		return 0, errBroken
	}
	f.sent = true
	return copy(b, "half"), nil
}

func TestFailedWriteLeavesTheTargetAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(p, []byte("whole"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, &failingReader{}, 0o644); !errors.Is(err, errBroken) {
		t.Fatalf("Write = %v, want the reader's error", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "whole" {
		t.Fatalf("target %q after a failed write, want it unchanged", got)
	}
	assertOnly(t, dir, "image.tar")

	// No directory: an error, nothing made.
	if err := Write(filepath.Join(dir, "no", "such"), strings.NewReader("x"), 0o644); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Write into a missing directory = %v, want not-exist", err)
	}
}

// TestTemporaryIsHiddenFromWatchers: while the content is being copied, the
// only new name in the directory is hidden and does not end in the
// target's extension.
func TestTemporaryIsHiddenFromWatchers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "10-tugboat.conflist")
	var during []string
	r := readerFunc(func(b []byte) (int, error) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			during = append(during, e.Name())
		}
		return 0, io.EOF
	})
	if err := Write(p, r, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || !strings.HasPrefix(during[0], ".10-tugboat.conflist.tmp") || filepath.Ext(during[0]) == ".conflist" {
		t.Fatalf("directory while writing: %v, want one hidden .tmp file", during)
	}
	assertOnly(t, dir, "10-tugboat.conflist")
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("directory holds %v, want %v", got, names)
	}
}
