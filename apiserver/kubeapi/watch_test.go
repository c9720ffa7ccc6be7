package kubeapi_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lines collects a running command's output lines.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) has(s string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.all {
		if strings.Contains(x, s) {
			return nil
		}
	}
	return fmt.Errorf("no line with %q in:\n%s", s, strings.Join(l.all, "\n"))
}

// start runs kubectl in the background until the test ends.
func (e *env) start(t *testing.T, args ...string) *lines {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kubectlPath(t), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.admin, "HOME="+e.dir, "KUBECACHEDIR="+filepath.Join(e.dir, "cache"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &lines{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		<-done
	})
	return l
}

func testKubectlWatch(t *testing.T, e *env) {
	w := e.start(t, "get", "deployments", "--watch", "--output-watch-events")
	wide := e.start(t, "get", "pods", "-l", "app=watched", "-w", "-o", "wide")
	eventually(t, "the watch's first table", func() error { return w.has("nginx-deployment") })
	e.kubectl(t, "create", "deployment", "watched", "--image=tugboat.local/echo:latest", "--replicas=1")
	eventually(t, "the ADDED event of the new deployment", func() error { return w.has("ADDED") })
	eventually(t, "the new deployment in the watch", func() error { return w.has("watched") })
	eventually(t, "its pod in the pod watch", func() error { return wide.has("watched-") })
	time.Sleep(0) // the watches end with the test
	e.kubectl(t, "delete", "deployment", "watched")
	eventually(t, "the DELETED event", func() error { return w.has("DELETED") })
}
