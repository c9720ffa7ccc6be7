package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/internal/syncbuf"
)

func TestReadLog(t *testing.T) {
	tests := []struct {
		name    string
		rotated []string // path.1, path.2, ...
		live    string
		opts    LogOptions
		want    string
	}{
		{name: "all", live: "a\nb\nc\n", want: "a\nb\nc\n"},
		{name: "tail 2", live: "a\nb\nc\n", opts: LogOptions{TailLines: 2}, want: "b\nc\n"},
		{name: "tail partial last line", live: "a\nb\nc", opts: LogOptions{TailLines: 2}, want: "b\nc"},
		{name: "tail more than lines", live: "a\nb\n", opts: LogOptions{TailLines: 10}, want: "a\nb\n"},
		{name: "empty lines count", live: "a\n\n\n", opts: LogOptions{TailLines: 2}, want: "\n\n"},
		{name: "rotated oldest first", rotated: []string{"2\n", "1\n"}, live: "0\n", want: "1\n2\n0\n"},
		{name: "tail across rotation", rotated: []string{"c\nd\n", "a\nb\n"}, live: "e\n", opts: LogOptions{TailLines: 3}, want: "c\nd\ne\n"},
		{name: "limit bytes", live: "hello world\n", opts: LogOptions{LimitBytes: 5}, want: "hello"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			writeFile(t, path, tc.live)
			for i, r := range tc.rotated {
				writeFile(t, rotatedName(path, i+1), r)
			}
			var b bytes.Buffer
			if err := ReadLog(context.Background(), path, tc.opts, &b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Fatalf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestReadLogMissing(t *testing.T) {
	err := ReadLog(context.Background(), filepath.Join(t.TempDir(), "none.log"), LogOptions{}, &bytes.Buffer{})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

// TestFollowAcrossRotation appends, rotates (copy+truncate) and appends
// again while a follower runs: it must see every line once, in order.
func TestFollowAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	done := make(chan struct{})
	out := &syncbuf.Buffer{}
	errc := make(chan error, 1)
	go func() {
		errc <- ReadLog(context.Background(), path, LogOptions{Follow: true, Done: done, PollInterval: 5 * time.Millisecond}, out)
	}()

	var want strings.Builder
	line := func(s string) {
		want.WriteString(s + "\n")
		if _, err := f.WriteString(s + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	line("one")
	waitFollowed(t, out, "one")
	line("two")
	if rotated, err := RotateLog(path, 1, 3); err != nil || !rotated {
		t.Fatalf("rotate: %v %v", rotated, err)
	}
	line("three")
	waitFollowed(t, out, "three")
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Fatalf("followed %q, want %q", out.String(), want.String())
	}
}

func TestRotateLogKeepsMaxFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	for i := range 5 {
		writeFile(t, path, strings.Repeat("x", 10)+string(rune('a'+i)))
		if _, err := RotateLog(path, 5, 3); err != nil {
			t.Fatal(err)
		}
	}
	files := logFiles(path)
	if len(files) != 3 {
		t.Fatalf("files = %v, want live + 2 rotated", files)
	}
	if got := readFile(t, rotatedName(path, 1)); !strings.HasSuffix(got, "e") {
		t.Fatalf("path.1 = %q, want the newest", got)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("live file = %q, want truncated", got)
	}
	if rotated, _ := RotateLog(path, 5, 3); rotated {
		t.Fatal("rotated a small file")
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitFollowed waits for the followed output to hold want.
func waitFollowed(t *testing.T, out *syncbuf.Buffer, want string) {
	t.Helper()
	wait.Eventually(t, 5*time.Second, fmt.Sprintf("%q followed", want), func() error {
		if got := out.String(); !strings.Contains(got, want) {
			return fmt.Errorf("followed so far: %q", got)
		}
		return nil
	})
}
