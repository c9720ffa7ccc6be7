package tugctl_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
)

var (
	bins   *cluster.Binaries
	tugctl string // the binary, built next to the cluster's by TestMain
)

func TestMain(m *testing.M) {
	os.Exit(cluster.TestMainWith(m, &bins, map[string]*string{"tugctl": &tugctl}))
}

// env runs tugctl as the cluster's admin.
type env struct {
	c    *cluster.Cluster
	home string
}

// result is what a command printed and its exit status.
type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.out, r.err)
}

func (e *env) cmd(ctx context.Context, stdin io.Reader, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, tugctl, append(e.c.ClientArgs("admin"), args...)...)
	cmd.Env = append(os.Environ(), "HOME="+e.home, "TUGBOAT_CONFIG=", "KUBECONFIG=")
	cmd.Stdin = stdin
	return cmd
}

// run runs tugctl with stdin (may be "") and returns what it did.
func (e *env) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := e.cmd(ctx, strings.NewReader(stdin), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tugctl %s: %v", strings.Join(args, " "), err)
	}
	return result{out.String(), errOut.String(), code}
}

// ok runs tugctl and fails the test unless it exits 0.
func (e *env) ok(t *testing.T, args ...string) string {
	t.Helper()
	r := e.run(t, "", args...)
	if r.code != 0 {
		t.Fatalf("tugctl %s: %v", strings.Join(args, " "), r)
	}
	return r.out
}

// background runs tugctl until the test ends (or stop) and collects its
// output.
func (e *env) background(t *testing.T, args ...string) (out *cluster.Output, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := e.cmd(ctx, nil, args...)
	out = &cluster.Output{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	return out, stop
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	wait.Eventually(t, 90*time.Second, what, f)
}
