package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("needs root: makes network namespaces and mounts")
	}
	t.Skip("needs root: makes network namespaces and mounts")
}

// nsDir is a namespace dir of the test's own, released when it ends.
func nsDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "netns")
	t.Cleanup(func() {
		if err := ReleaseDir(dir); err != nil {
			t.Errorf("ReleaseDir: %v", err)
		}
		if isMountPoint(t, dir) {
			t.Errorf("%s is still a mount point after ReleaseDir", dir)
		}
	})
	return dir
}

// isMountPoint reports whether dir is a mount point of this process's
// mount namespace, and fails the test if it is one that does not share.
func isMountPoint(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[4] == dir {
			if !strings.HasPrefix(f[6], "shared:") {
				t.Errorf("%s is mounted without shared propagation: %s", dir, line)
			}
			return true
		}
	}
	return false
}

func TestCreateEnterRemove(t *testing.T) {
	requireRoot(t)
	dir := nsDir(t)
	path, err := Create(dir, "pod-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Remove(path) })
	if path != filepath.Join(dir, "pod-a") {
		t.Errorf("path %s", path)
	}
	if !isMountPoint(t, dir) {
		t.Errorf("%s is not a mount point: a later \"ip netns add\" would mount over the pins", dir)
	}
	if _, err := Create(dir, "pod-a"); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create of the same name: %v, want ErrExists", err)
	}
	if _, err := Create(dir, "../escape"); err == nil {
		t.Fatal("Create accepted a name with a slash")
	}
	if !IsPinned(path) {
		t.Fatal("IsPinned = false for a fresh pin")
	}

	here, err := vnetns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	var inside vnetns.NsHandle
	var loUp bool
	err = DoPath(path, func() error {
		var err error
		if inside, err = vnetns.Get(); err != nil {
			return err
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		loUp = lo.Attrs().Flags&net.FlagUp != 0
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if inside.Equal(here) {
		t.Error("DoPath ran fn in the caller's namespace")
	}
	if !loUp {
		t.Error("lo is not up in the new namespace")
	}
	if now, err := vnetns.Get(); err != nil || !now.Equal(here) {
		t.Errorf("the caller's namespace changed (%v)", err)
	} else {
		now.Close()
	}

	sentinel := errors.New("from fn")
	if err := Do(int(inside), func() error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("Do = %v, want fn's error", err)
	}
	ran := false
	if err := Do(0, func() error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("Do(0) = %v, ran %v: want fn run in place", err, ran)
	}

	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if IsPinned(path) {
		t.Fatal("still pinned after Remove")
	}
	// What a reboot leaves of a pin on disk: the file without its mount.
	stale := filepath.Join(t.TempDir(), "stale-pin")
	if err := os.WriteFile(stale, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if IsPinned(stale) {
		t.Error("IsPinned = true for a pin file with no namespace mounted on it")
	}
}

// TestReleaseDirLeavesABusyDir: a dir that still holds a pin stays
// mounted; once empty it is unmounted.
func TestReleaseDirLeavesABusyDir(t *testing.T) {
	requireRoot(t)
	dir := nsDir(t)
	path, err := Create(dir, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if err := ReleaseDir(dir); err != nil {
		t.Fatal(err)
	}
	if !isMountPoint(t, dir) || !IsPinned(path) {
		t.Fatal("ReleaseDir unmounted a dir that holds a pin")
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := ReleaseDir(dir); err != nil {
		t.Fatal(err)
	}
	if isMountPoint(t, dir) {
		t.Fatal("ReleaseDir left an empty dir mounted")
	}
}

// TestPinIsSeenByIPNetns: a namespace pinned in DefaultDir is one that
// iproute2 knows by its name, with lo up.
func TestPinIsSeenByIPNetns(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("ip"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ip (iproute2) not found")
		}
		t.Skip("ip (iproute2) not found: apt-get install iproute2")
	}
	name := fmt.Sprintf("tugboat-netns-test-%d", os.Getpid())
	path, err := Create(DefaultDir, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Remove(path); err != nil {
			t.Error(err)
		}
	})
	out, err := exec.Command("ip", "netns", "exec", name, "ip", "-o", "link", "show", "lo").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "UP") {
		t.Errorf("lo in the new netns is not up: %v %s", err, out)
	}
}

// TestNoThreadLeftInANamespace: after many Creates and Dos, every thread
// of the process is back in the namespace it started in. (A thread left
// locked on purpose would, when it is the main thread, which Go cannot
// end, keep /proc/<pid>/ns/net pointing at a pod's namespace.)
func TestNoThreadLeftInANamespace(t *testing.T) {
	requireRoot(t)
	dir := nsDir(t)
	want, err := os.Readlink("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, err := Create(dir, "churn-"+strconv.Itoa(i))
			if err == nil {
				err = DoPath(path, func() error { return nil })
			}
			if err == nil {
				err = Remove(path)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		got, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net")
		if err != nil {
			continue // the thread ended meanwhile
		}
		if got != want {
			t.Errorf("thread %s is in %s, not the process's %s", task.Name(), got, want)
		}
	}
}
