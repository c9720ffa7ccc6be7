package netlab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/internal/netns"
)

// netnsDir is where named network namespaces are pinned, the same folder
// "ip netns" uses, so "ip netns exec tb-abc123-h1 ..." works on a lab.
const netnsDir = netns.DefaultDir

func netnsPath(name string) string { return filepath.Join(netnsDir, name) }

// createNamedNetns makes a new network namespace pinned at
// /run/netns/<name> with loopback up, as "ip netns add" and "ip link set
// lo up" would, and opens it. It fails if the name exists.
func createNamedNetns(name string) (vnetns.NsHandle, error) {
	path, err := netns.Create(netnsDir, name)
	if err != nil {
		return vnetns.None(), fmt.Errorf("netlab: %w", err)
	}
	h, err := vnetns.GetFromPath(path)
	if err != nil {
		_ = netns.Remove(path)
		return vnetns.None(), fmt.Errorf("netlab: open netns %s: %w", name, err)
	}
	return h, nil
}

// deleteNamedNetns unmounts and removes /run/netns/<name>. A missing name
// is not an error. The namespace itself (and its links) goes away when no
// process and no open file holds it any more.
func deleteNamedNetns(name string) error {
	if err := netns.Remove(netnsPath(name)); err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	return nil
}

// nsKey identifies a namespace by the device and inode of its nsfs file.
type nsKey struct{ dev, ino uint64 }

func nsKeyOf(path string) (nsKey, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsKey{}, err
	}
	return nsKey{dev: st.Dev, ino: st.Ino}, nil
}

// pidsInNetns returns the processes (but this one) whose network namespace
// is key.
func pidsInNetns(key nsKey) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		k, err := nsKeyOf(filepath.Join("/proc", e.Name(), "ns", "net"))
		if err != nil || k != key {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// processName returns the comm of pid, for log messages.
func processName(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return "?"
	}
	return string(trimNewline(b))
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// killPIDsInNetns sends SIGKILL to every process in the namespace key. Each
// process is pinned with a pidfd before its namespace is checked and the
// signal sent through that pidfd, so a reused PID is never hit. It returns
// the PIDs it killed.
func killPIDsInNetns(key nsKey) []int {
	var killed []int
	for _, pid := range pidsInNetns(key) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		k, err := nsKeyOf(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"))
		if err == nil && k == key && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
			killed = append(killed, pid)
		}
		unix.Close(fd)
	}
	return killed
}
