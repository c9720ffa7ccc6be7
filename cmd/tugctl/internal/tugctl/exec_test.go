package tugctl

import (
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
)

func TestExec(t *testing.T) {
	e := newEnv(t)
	e.startFakeNode("n1")
	boundPod(t, e, "web", "n1", "Running", nil)
	mustCreate(t, e.c, testPod("pending", nil))

	if r := mustOK(t, e.run("exec", "web", "--", "echo", "hi", "-n")); r.out != "n1/web/ tty=false: hi -n\n" {
		t.Errorf("exec echo: %v", r)
	}
	if r := mustOK(t, e.runIn("hello\nworld\n", "exec", "-i", "web", "--", "cat")); r.out != "hello\nworld\n" {
		t.Errorf("exec -i cat: %v", r)
	}
	// Without -i nothing of stdin is sent.
	if r := mustOK(t, e.runIn("hello\n", "exec", "web", "--", "cat")); r.out != "" {
		t.Errorf("exec cat without -i: %v", r)
	}
	// The remote exit status becomes tugctl's.
	r := e.run("exec", "web", "--", "fail", "3")
	if r.code != 3 || r.err != "failing\ncommand terminated with exit code 3\n" {
		t.Errorf("exec fail 3: %v", r)
	}
	// -t without a terminal on stdin: a warning, then no TTY.
	r = mustOK(t, e.runIn("x", "exec", "-it", "web", "--", "echo"))
	if r.out != "n1/web/ tty=false: \n" || r.err != "Unable to use a TTY - input is not a terminal or the right kind of file\n" {
		t.Errorf("exec -it without a terminal: %v", r)
	}
	// Interrupted (^C without -t): exit 130, nothing more printed.
	b := e.start("exec", "web", "--", "sleep")
	wait.Eventually(t, 10*time.Second, "the command to start", outputIs(b.out, "sleeping\n"))
	b.cancel()
	if code := b.wait(t, 10*time.Second); code != 130 || b.err.String() != "" {
		t.Errorf("interrupted exec: exit %d, stderr %q", code, b.err.String())
	}
	mustFail(t, e.run("exec", "web", "--", "nope"), `start.command: "nope" not found`)
	mustFail(t, e.run("exec", "pending", "--", "echo"), "not scheduled to a node yet")
	mustFail(t, e.run("exec", "web"), "exec: no command")
	mustFail(t, e.run("exec", "--", "echo"), "exec: name the pod")
	mustFail(t, e.run("exec", "web", "other", "--", "echo"), "exec: one POD before --")
}
