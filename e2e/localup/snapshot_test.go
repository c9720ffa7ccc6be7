package localup

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/e2e/netlab"
)

// snapshotter lists, by kind, what the host holds that a local cluster
// could have made: in the node's network namespace everything (it is the
// test's own), on the shared host what carries the run's names or lives
// where local-up must not write.
type snapshotter struct {
	h     *netlab.Host
	id    string // the run's node name, containerd namespace and cgroup root
	state string // TUGBOAT_STATE
}

// snapshot is the host by kind: sorted lines.
type snapshot map[string][]string

func (s *snapshotter) take(t *testing.T) snapshot {
	t.Helper()
	snap := snapshot{
		"links":     s.inHost(t, linkNames, "ip", "-o", "link", "show"),
		"addresses": s.inHost(t, notLinkLocal(addrLines), "ip", "-o", "addr", "show"),
		"routes":    s.inHost(t, notLinkLocal(lines), "ip", "route", "show", "table", "all"),
		"nftables":  s.inHost(t, nftObjects, "nft", "list", "ruleset"),
		"mounts":    s.mounts(t),
		"cgroups":   s.cgroups(),
		"files":     s.files(),
		"processes": s.processes(),
	}
	for k := range snap {
		slices.Sort(snap[k])
	}
	return snap
}

// inHost runs a command in the node's network namespace and parses its
// output.
func (s *snapshotter) inHost(t *testing.T, parse func(string) []string, name string, args ...string) []string {
	t.Helper()
	out, err := s.h.Output(context.Background(), exec.Command(name, args...))
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return parse(string(out))
}

func lines(out string) []string {
	var l []string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			l = append(l, line)
		}
	}
	return l
}

// notLinkLocal drops IPv6 link-local addresses and routes: the kernel
// adds them to every link that comes up, a moment later (after duplicate
// address detection), whoever made the link.
func notLinkLocal(parse func(string) []string) func(string) []string {
	return func(out string) []string {
		var l []string
		for _, line := range parse(out) {
			if !strings.Contains(line, "fe80::") {
				l = append(l, line)
			}
		}
		return l
	}
}

// linkNames: "2: eth0@if12: <...>" -> "eth0".
func linkNames(out string) []string {
	var names []string
	for _, line := range lines(out) {
		f := strings.Fields(line)
		if len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			names = append(names, name)
		}
	}
	return names
}

// addrLines: "2: eth0    inet 10.1.2.3/24 ..." -> "eth0 inet 10.1.2.3/24".
func addrLines(out string) []string {
	var l []string
	for _, line := range lines(out) {
		f := strings.Fields(line)
		if len(f) > 3 {
			l = append(l, f[1]+" "+f[2]+" "+f[3])
		}
	}
	return l
}

// nftObjects: every table, and every chain as "table ... / chain ...".
func nftObjects(out string) []string {
	var objs []string
	table := ""
	for _, line := range lines(out) {
		switch {
		case strings.HasPrefix(line, "table "):
			table = strings.TrimSuffix(line, " {")
			objs = append(objs, table)
		case strings.HasPrefix(line, "chain "):
			objs = append(objs, table+" / "+strings.TrimSuffix(line, " {"))
		}
	}
	return objs
}

// mounts are the mount points of the run (under its state dir, or naming
// it) and any under /run/netns naming it.
func (s *snapshotter) mounts(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var l []string
	for _, line := range lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if mp := f[4]; strings.HasPrefix(mp, s.state) || strings.Contains(mp, s.id) {
			l = append(l, mp)
		}
	}
	return l
}

// cgroups are the run's cgroup trees and the default root local-up must
// leave alone, in every hierarchy.
func (s *snapshotter) cgroups() []string {
	var l []string
	for _, root := range []string{"/" + s.id, "/tugboat"} {
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + root)
		if d := "/sys/fs/cgroup" + root; exists(d) {
			dirs = append(dirs, d)
		}
		for _, d := range dirs {
			_ = filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
				if err == nil && de.IsDir() {
					l = append(l, p)
				}
				return nil
			})
		}
	}
	return l
}

// files: the system CNI config folder, the run's network namespace pins,
// and containerd's per-namespace runc state.
func (s *snapshotter) files() []string {
	var l []string
	for _, dir := range []string{"/etc/cni", "/etc/cni/net.d"} {
		if exists(dir) {
			l = append(l, dir+"/")
		}
	}
	if entries, err := os.ReadDir("/etc/cni/net.d"); err == nil {
		for _, e := range entries {
			l = append(l, "/etc/cni/net.d/"+e.Name())
		}
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if strings.Contains(e.Name(), s.id) {
				l = append(l, "/run/netns/"+e.Name())
			}
		}
	}
	for _, p := range []string{"/run/containerd/runc/" + s.id, "/run/containerd/" + s.id} {
		if exists(p) {
			l = append(l, p)
		}
	}
	return l
}

// processes are those whose command line names the run's state dir or id
// (the components, containerd, its shims, the pods' processes started
// from the state dir's files).
func (s *snapshotter) processes() []string {
	var l []string
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' || e.Name() == strconv.Itoa(self) {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if strings.Contains(cmdline, s.state) || strings.Contains(cmdline, s.id) {
			l = append(l, cmdline)
		}
	}
	return l
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// added returns what is in b but not in a (both sorted).
func added(a, b []string) []string {
	var out []string
	for _, x := range b {
		if _, found := slices.BinarySearch(a, x); !found {
			out = append(out, x)
		}
	}
	return out
}
