package containerd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/internal/syncbuf"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestLogFollowAndRotation follows a chatty container's log while the
// LogRotator rotates it: the follower sees the lines in order, none twice.
func TestLogFollowAndRotation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.runPod("chatty")
	id := e.container(p, runtime.ContainerConfig{
		Name:    "chatty",
		Command: []string{"sh", "-c", `i=0; while [ $i -lt 300 ]; do echo "line $i"; i=$((i+1)); if [ $((i % 20)) -eq 0 ]; then sleep 0.1; fi; done`},
	})
	st := e.waitState(id, runtime.ContainerRunning, 10*time.Second)

	done := make(chan struct{})
	var followed syncbuf.Buffer
	errc := make(chan error, 1)
	go func() {
		errc <- runtime.ReadLog(ctx, st.LogPath, runtime.LogOptions{Follow: true, Done: done, PollInterval: 10 * time.Millisecond}, &followed)
	}()
	rot := &runtime.LogRotator{Containers: e.rt, MaxBytes: 500, MaxFiles: 3}
	rotations := 0
	for {
		st, _ = e.rt.ContainerStatus(ctx, id)
		if st.State != runtime.ContainerRunning {
			break
		}
		if err := rot.RotateOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(st.LogPath + ".1"); err == nil {
			rotations++
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("container ran %s; loop done at %s", st.FinishedAt.Sub(st.StartedAt), time.Since(st.StartedAt))
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if rotations == 0 {
		t.Fatal("the log was never rotated")
	}
	if _, err := os.Stat(st.LogPath + ".3"); err == nil {
		t.Error("more rotated files kept than MaxFiles-1")
	}
	lines := strings.Split(strings.TrimSpace(followed.String()), "\n")
	last := -1
	for _, l := range lines {
		var n int
		if _, err := fmt.Sscanf(l, "line %d", &n); err != nil {
			t.Fatalf("odd line %q", l)
		}
		if n <= last {
			t.Fatalf("line %d after line %d: out of order or twice", n, last)
		}
		last = n
	}
	// Copy-and-truncate may lose the few lines written between the copy
	// and the truncation; nearly all must arrive.
	if len(lines) < 290 || last != 299 {
		t.Errorf("followed %d lines, last %d; want ~300 ending at 299", len(lines), last)
	}
	t.Logf("followed %d/300 lines across the rotations", len(lines))
}
