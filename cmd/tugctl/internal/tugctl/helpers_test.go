package tugctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/internal/syncbuf"
)

// env is a real apiserver on real etcd and a way to run tugctl command
// lines against it in-process.
type env struct {
	t    *testing.T
	srv  *apiservertest.Server
	c    *client.Client
	home string
	// ns is the default namespace of the command lines (inNamespace).
	ns string
	// vars are more environment variables of the command lines.
	vars map[string]string
}

func newEnv(t *testing.T, opts ...apiservertest.Option) *env {
	t.Helper()
	srv := apiservertest.Start(t, opts...)
	return &env{t: t, srv: srv, c: srv.Client, home: t.TempDir()}
}

// result is what a command line printed and its exit status.
type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return "exit " + strconv.Itoa(r.code) + "\n--- stdout:\n" + r.out + "--- stderr:\n" + r.err
}

// run runs tugctl with args, TUGBOAT_SERVER pointing at the test server and
// HOME at an empty temporary directory.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.runIn("", args...)
}

// runIn is run with stdin.
func (e *env) runIn(stdin string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Execute(ctx, e.options(strings.NewReader(stdin), &out, &errOut), args)
	return result{out.String(), errOut.String(), code}
}

func (e *env) options(in io.Reader, out, errOut io.Writer) *cli.Options {
	return &cli.Options{
		Streams: cli.Streams{In: in, Out: out, ErrOut: errOut},
		Getenv: func(k string) string {
			switch k {
			case "TUGBOAT_SERVER":
				return e.srv.Addr()
			case "HOME":
				return e.home
			}
			return e.vars[k]
		},
	}
}

// background runs a long command (get -w, rollout status) until it exits
// or stop is called; output is readable while it runs.
type background struct {
	out, err *syncbuf.Buffer
	done     chan int
	cancel   context.CancelFunc
}

func (e *env) start(args ...string) *background {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	b := &background{out: &syncbuf.Buffer{}, err: &syncbuf.Buffer{}, done: make(chan int, 1), cancel: cancel}
	o := e.options(strings.NewReader(""), b.out, b.err)
	go func() { b.done <- Execute(ctx, o, args) }()
	e.t.Cleanup(func() { cancel(); <-b.done; b.done <- 0 })
	return b
}

// wait waits for the command to exit and returns its status.
func (b *background) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case code := <-b.done:
		b.done <- code
		return code
	case <-time.After(d):
		t.Fatalf("command did not exit within %v; stdout:\n%s\nstderr:\n%s", d, b.out.String(), b.err.String())
		return -1
	}
}

// outputHas is a wait.Eventually condition: out (a running command's
// output) contains want.
func outputHas(out *syncbuf.Buffer, want string) func() error {
	return func() error {
		if s := out.String(); !strings.Contains(s, want) {
			return fmt.Errorf("output so far: %q", s)
		}
		return nil
	}
}

// outputIs is a wait.Eventually condition: out is want.
func outputIs(out *syncbuf.Buffer, want string) func() error {
	return func() error {
		if s := out.String(); s != want {
			return fmt.Errorf("output so far: %q", s)
		}
		return nil
	}
}

// writeFile writes a file under a temporary directory and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// mustOK fails the test unless the command exited 0.
func mustOK(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("command failed: %v", r)
	}
	return r
}

// mustFail fails the test unless the command exited non-zero with stderr
// containing every want.
func mustFail(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("command succeeded, want failure: %v", r)
	}
	for _, w := range want {
		if !strings.Contains(r.err, w) {
			t.Errorf("stderr lacks %q: %v", w, r)
		}
	}
}

// lines returns the output lines split into whitespace-separated fields.
func fieldsOf(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

// row finds the row whose first field is name.
func row(t *testing.T, out, name string) []string {
	t.Helper()
	for _, r := range fieldsOf(out) {
		if len(r) > 0 && r[0] == name {
			return r
		}
	}
	t.Fatalf("no row %q in\n%s", name, out)
	return nil
}

func mustCreate[T v1.Object](t *testing.T, c *client.Client, obj T) T {
	t.Helper()
	out, err := client.For[T](c).Create(ctxT(t), obj)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return out
}

// inNamespace is e for one subtest of a test that shares e's server: a
// namespace of its own (created now), the default namespace of its
// command lines through the config file of its own HOME.
func (e *env) inNamespace(t *testing.T, ns string) *env {
	t.Helper()
	if _, err := client.For[*v1.Namespace](e.c).Create(ctxT(t), &v1.Namespace{Metadata: &v1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	sub := &env{t: t, srv: e.srv, c: e.c, home: t.TempDir(), ns: ns}
	if err := os.MkdirAll(filepath.Join(sub.home, ".tugboat"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sub.home, ".tugboat"), "config", "namespace: "+ns+"\n")
	return sub
}
