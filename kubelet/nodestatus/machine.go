package nodestatus

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Machine facts the node reports, read from /proc, /etc and uname.

// memTotal is MemTotal from /proc/meminfo, in bytes.
func memTotal() (int64, error) { return meminfo("MemTotal") }

// memAvailable is MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (int64, error) { return meminfo("MemAvailable") }

func meminfo(key string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			break
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/meminfo %s: %w", key, err)
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		return n, nil
	}
	return 0, fmt.Errorf("/proc/meminfo: no %s", key)
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// osImage is PRETTY_NAME from /etc/os-release.
func osImage() string {
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return "Linux"
}

func kernelVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// systemInfo is the node's nodeInfo without the runtime version.
func systemInfo(kubeletVersion string) *v1.NodeSystemInfo {
	return &v1.NodeSystemInfo{
		MachineId:       readTrim("/etc/machine-id"),
		BootId:          readTrim("/proc/sys/kernel/random/boot_id"),
		KernelVersion:   kernelVersion(),
		OsImage:         osImage(),
		KubeletVersion:  kubeletVersion,
		OperatingSystem: goruntime.GOOS,
		Architecture:    goruntime.GOARCH,
	}
}

// diskAvailable returns the fraction of the file system holding path that
// is available to unprivileged users.
// diskCapacity is the size in bytes of the file system holding path
// (the node's ephemeral-storage capacity when path is the root dir, as
// Kubernetes' kubelet reports its nodefs).
func diskCapacity(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks) * st.Bsize, nil
}

func diskAvailable(path string) (float64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	if st.Blocks == 0 {
		return 1, nil
	}
	return float64(st.Bavail) / float64(st.Blocks), nil
}

// DefaultNodeIP is the node's InternalIP when --node-ip is not given: the
// first IPv4 address of the interface of the default route, or, with no
// default route (a lab host), of the first interface that has a global
// IPv4 address.
func DefaultNodeIP() (netip.Addr, error) {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("listing routes: %w", err)
	}
	for _, r := range routes {
		if r.Dst != nil && !(r.Dst.IP.IsUnspecified() && isZeroMask(r.Dst.Mask)) {
			continue
		}
		link, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil {
			continue
		}
		if a, ok := firstGlobalV4(link); ok {
			return a, nil
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("listing interfaces: %w", err)
	}
	for _, l := range links {
		if l.Attrs().Flags&(1<<0) == 0 { // not up
			continue
		}
		if a, ok := firstGlobalV4(l); ok {
			return a, nil
		}
	}
	return netip.Addr{}, errors.New("no default route and no interface with a global IPv4 address: give --node-ip")
}

func isZeroMask(m []byte) bool {
	for _, b := range m {
		if b != 0 {
			return false
		}
	}
	return true
}

func firstGlobalV4(l netlink.Link) (netip.Addr, bool) {
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if ok && ip.Unmap().IsGlobalUnicast() {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

func timestampNow(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

func parentDir(p string) string { return filepath.Dir(p) }
