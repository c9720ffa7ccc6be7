package netlab

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// staleHelperEnv makes the test binary act as a lab-owning process that
// the stale-cleanup test kills (see TestCleanupStaleRemovesKilledRun).
const staleHelperEnv = "NETLAB_TEST_STALE_HELPER"

func TestMain(m *testing.M) {
	if name := os.Getenv(staleHelperEnv); name != "" {
		runStaleHelper(name)
		return // not reached: the helper blocks until killed
	}
	os.Exit(m.Run())
}

// runStaleHelper makes a lab, starts a process in host 1 that leaves its
// process group (so only CleanupStale can find it, by its netns), prints
// "READY <pid>" and waits to be killed.
func runStaleHelper(name string) {
	ctx := context.Background()
	lab, err := New(ctx, Config{Prefix: stalePrefix, Name: name, Hosts: 2})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	out, err := lab.Hosts[0].Output(ctx, exec.Command(bb, "sh", "-c",
		bb+" setsid "+bb+" sleep 600 </dev/null >/dev/null 2>&1 & echo $!"))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("READY", strings.TrimSpace(string(out)))
	select {} // until SIGKILL
}

// startStaleHelper runs the helper for run name, waits for it to report,
// returns its process and the PID of the process it left in host 1.
func startStaleHelper(t *testing.T, name string) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), staleHelperEnv+"="+name)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		pidStr, ok := strings.CutPrefix(line, "READY ")
		if !ok {
			t.Fatalf("helper: %q", line)
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			t.Fatalf("helper: %q: %v", line, err)
		}
		return cmd, pid
	case <-time.After(20 * time.Second):
		t.Fatal("helper did not report READY within 20s")
	}
	return nil, 0
}

// busybox returns the path of busybox, which the tests use for ping, httpd
// and sh; without it they skip, or fail under CI (hack/install-deps.sh
// installs busybox-static).
func busybox(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("busybox")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("busybox not found (hack/install-deps.sh installs busybox-static)")
		}
		t.Skip("busybox not found; install busybox-static")
	}
	return p
}

// leftovers lists what of lab id exists: namespaces, root links, the lock.
func leftovers(t *testing.T, id string) []string {
	t.Helper()
	var found []string
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), id+"-") {
			found = append(found, "netns "+e.Name())
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, id+"-") {
			found = append(found, "link "+i.Name)
		}
	}
	if _, err := os.Stat(runLockPath(id)); err == nil {
		found = append(found, "lock "+runLockPath(id))
	}
	return found
}

// processGone reports whether pid no longer runs (gone, or a zombie
// waiting for a parent that is not ours to reap it).
func processGone(pid int) error {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
		return nil
	}
	return fmt.Errorf("pid %d still running", pid)
}
