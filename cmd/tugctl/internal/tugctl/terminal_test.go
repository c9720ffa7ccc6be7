//go:build linux

package tugctl

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/internal/syncbuf"
)

// openPTY opens a pseudo-terminal pair: what is written to master is read
// from slave as if typed.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// TestExecTTY runs exec -it on a real pseudo-terminal: the terminal is put
// in raw mode (a single key reaches the command without Enter), its size is
// sent at the start and again on SIGWINCH, and it is restored at the end.
func TestExecTTY(t *testing.T) {
	e := newEnv(t)
	node := e.startFakeNode("n1")
	boundPod(t, e, "web", "n1", "Running", nil)
	master, slave := openPTY(t)
	fd := int(slave.Fd())
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: 100, Row: 40}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}

	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctxT(t), e.options(slave, out, errOut), []string{"exec", "-it", "web", "--", "size"})
	}()
	resizesAre := func(want string) func() error {
		return func() error {
			node.mu.Lock()
			defer node.mu.Unlock()
			if got := strings.Join(node.resizes, ","); got != want {
				return fmt.Errorf("resizes %q", got)
			}
			return nil
		}
	}
	wait.Eventually(t, 10*time.Second, "the first size", resizesAre("100x40"))
	st, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lflag&(unix.ICANON|unix.ECHO) != 0 {
		t.Errorf("terminal not in raw mode during exec: lflag %#x", st.Lflag)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: 120, Row: 50}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "the new size", resizesAre("100x40,120x50"))
	// One key, no Enter: only raw mode lets it through at once.
	if _, err := master.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 || out.String() != "sizes 100x40,120x50\r\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("exec -it did not end; stdout %q stderr %q", out.String(), errOut.String())
	}
	after, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("terminal not restored: before %+v after %+v", before, after)
	}
}

// TestImageImportProgressBar imports with a terminal as standard output: a
// bar is drawn in place while sending and replaced by the result line.
func TestImageImportProgressBar(t *testing.T) {
	e := newEnv(t)
	e.startFakeNode("n1")
	readyNode(t, e, "n1", "True")
	p, _ := writeTar(t, t.TempDir(), "app.tar", "manifest.json", "layer.tar", "config.json", "more.tar")
	master, slave := openPTY(t)
	var screen syncbuf.Buffer
	go func() { _, _ = io.Copy(&screen, master) }()
	var errOut bytes.Buffer
	if code := Execute(ctxT(t), e.options(strings.NewReader(""), slave, &errOut), []string{"image", "import", p}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	wait.Eventually(t, 10*time.Second, "the result line", outputHas(&screen, "n1: imported"))
	out := screen.String()
	if !strings.Contains(out, "\r\x1b[Kn1 [") || !strings.Contains(out, "] 100% 1.2MiB/1.2MiB") || !strings.Contains(out, "\r\x1b[Kn1: imported example.com/imported:") {
		t.Errorf("terminal output %q", out)
	}
	if strings.Contains(out, "importing "+p) {
		t.Errorf("the plain-output header was printed on a terminal: %q", out)
	}
}

// TestRunTTY runs run -it --rm on a real pseudo-terminal: raw mode while
// attached (one key gets through without Enter), kubectl's prompt hint,
// the terminal restored, the exit status the container's, the pod gone.
func TestRunTTY(t *testing.T) {
	e := newEnv(t)
	node := e.startFakeNode("n1")
	k := e.startFakeKubelet("n1")
	node.set(func(n *fakeNode) {
		n.process = func(st *v1.ExecStart, stdin string) (string, bool, int32) {
			e.finish(t, st.Pod, 7)
			return "typed " + stdin + "\r\n", true, 7
		}
	})
	master, slave := openPTY(t)
	fd := int(slave.Fd())
	before, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctxT(t), e.options(slave, out, errOut), []string{"run", "-it", "--rm", "shell", "--image=busybox", "--restart=Never", "--", "sh"})
	}()
	wait.Eventually(t, 10*time.Second, "the prompt hint", outputHas(errOut, "If you don't see a command prompt, try pressing enter.\n"))
	wait.Eventually(t, 10*time.Second, "raw mode", func() error {
		st, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil || st.Lflag&(unix.ICANON|unix.ECHO) != 0 {
			return fmt.Errorf("lflag %#x, %v", st.Lflag, err)
		}
		return nil
	})
	if _, err := master.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		// kubectl (v1.37) prints its reattach note after any interactive
		// terminal session, run -it --rm included.
		if code != 7 || out.String() != "typed q\r\nSession ended, resume using 'tugctl attach shell -c shell -n default -i -t' command\npod \"shell\" deleted\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("run -it did not end; stdout %q stderr %q", out.String(), errOut.String())
	}
	after, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("terminal not restored: before %+v after %+v", before, after)
	}
	if c := k.spec("shell"); c == nil || !c.Tty || !c.Stdin || !c.StdinOnce {
		t.Errorf("the pod's container: %v", c)
	}
}
