package netlab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/internal/netns"
)

// stateDir holds the lock files that tell live labs from stale ones. It is
// on tmpfs, like /run/netns, so both vanish together at reboot.
const stateDir = "/run/tugboat-netlab"

// suffixRE matches what follows "<prefix><name>-" in a lab's names.
var suffixRE = regexp.MustCompile(`^(sw|rt|h[0-9]+)$`)

func setupLockPath() string         { return filepath.Join(stateDir, "setup.lock") }
func runLockPath(id string) string  { return filepath.Join(stateDir, id+".lock") }
func manualPath(id string) string   { return filepath.Join(stateDir, id+".manual") }
func runOfLockFile(f string) string { return strings.TrimSuffix(f, ".lock") }

// lockSetup takes the machine-wide lock that serialises making labs and
// removing stale ones (across test processes and hack/netlab.sh), polling
// until ctx is done.
func lockSetup(ctx context.Context) (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	f, err := os.OpenFile(setupLockPath(), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("netlab: lock %s: %w", setupLockPath(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("netlab: waiting for %s: %w", setupLockPath(), ctx.Err())
		case <-time.After(delay):
		}
	}
}

func unlockFile(f *os.File) {
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	f.Close()
}

// tryLockRun takes the flock of run id without waiting. held is true when
// another live process holds it.
func tryLockRun(id string) (f *os.File, held bool, err error) {
	f, err = os.OpenFile(runLockPath(id), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("netlab: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("netlab: lock %s: %w", runLockPath(id), err)
	}
	return f, false, nil
}

// lockRun takes the flock that marks run id as live for the lab's life. The
// file is opened close-on-exec, so processes the lab starts do not keep it.
func lockRun(id string) (*os.File, error) {
	f, held, err := tryLockRun(id)
	if err != nil {
		return nil, err
	}
	if held {
		return nil, fmt.Errorf("netlab: lab %s is in use by another live process", id)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return f, nil
}

// releaseRun removes the lock file of run id and drops the lock.
func releaseRun(id string, f *os.File) {
	_ = os.Remove(runLockPath(id))
	unlockFile(f)
}

// CleanupStale removes what earlier, dead runs of labs with this prefix
// left behind: their network namespaces (after killing any process still in
// them), their link in the root namespace and their lock file. A run is
// stale when no live process holds its lock: labs of other running test
// processes are left alone, and so are labs made by hack/netlab.sh (which
// carry a ".manual" marker instead of a lock). It returns the names it
// removed. New calls it; call it directly to clean up without making a lab.
func CleanupStale(ctx context.Context, prefix string, logger *slog.Logger) ([]string, error) {
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("netlab: prefix %q: must match %s", prefix, prefixRE)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	setup, err := lockSetup(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockFile(setup)
	return cleanupStaleLocked(prefix, logger)
}

// cleanupStaleLocked is CleanupStale with the setup lock held.
func cleanupStaleLocked(prefix string, log *slog.Logger) ([]string, error) {
	rootNL, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("netlab: netlink: %w", err)
	}
	defer rootNL.Close()

	found, err := findRuns(prefix, rootNL)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(found)) {
		if _, err := os.Stat(manualPath(id)); err == nil {
			log.Debug("leaving manual lab alone", "lab", id)
			continue
		}
		lock, held, err := tryLockRun(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if held {
			continue // a live lab of another process (or of this one)
		}
		names, err := removeRun(found[id], rootNL, log)
		removed = append(removed, names...)
		if err != nil {
			errs = append(errs, err)
		}
		releaseRun(id, lock)
		log.Info("removed stale lab", "lab", id, "removed", names)
	}
	return removed, errors.Join(errs...)
}

// runNames is what findRuns found of one run.
type runNames struct {
	netns []string // names in /run/netns
	links []string // links in the root namespace
}

// findRuns lists the runs with the prefix that have a namespace, a root
// link or a lock file.
func findRuns(prefix string, rootNL *netlink.Handle) (map[string]*runNames, error) {
	runs := map[string]*runNames{}
	get := func(id string) *runNames {
		if runs[id] == nil {
			runs[id] = &runNames{}
		}
		return runs[id]
	}
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	for _, e := range entries {
		if id, ok := parseName(prefix, e.Name()); ok {
			get(id).netns = append(get(id).netns, e.Name())
		}
	}
	links, err := listLinks(rootNL)
	if err != nil {
		return nil, err
	}
	for _, link := range links {
		name := link.Attrs().Name
		if id, ok := parseName(prefix, name); ok && link.Type() == "veth" {
			get(id).links = append(get(id).links, name)
		}
	}
	locks, err := os.ReadDir(stateDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	for _, e := range locks {
		id := runOfLockFile(e.Name())
		if id != e.Name() && strings.HasPrefix(id, prefix) && nameRE.MatchString(strings.TrimPrefix(id, prefix)) {
			get(id)
		}
	}
	return runs, nil
}

// parseName splits "<prefix><name>-<suffix>" and returns the run id
// (<prefix><name>), or false when the name is not one a lab makes.
func parseName(prefix, name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return "", false
	}
	id, suffix, ok := strings.Cut(rest, "-")
	if !ok || !nameRE.MatchString(id) || !suffixRE.MatchString(suffix) {
		return "", false
	}
	return prefix + id, true
}

// removeRun kills the processes in a stale run's namespaces, then deletes
// its root links and namespaces.
func removeRun(rn *runNames, rootNL *netlink.Handle, log *slog.Logger) ([]string, error) {
	var removed []string
	var errs []error
	for _, n := range rn.netns {
		path := netnsPath(n)
		if !netns.IsPinned(path) {
			continue
		}
		if key, err := nsKeyOf(path); err == nil {
			for _, pid := range killPIDsInNetns(key) {
				log.Warn("killed process left in stale lab netns", "netns", n, "pid", pid)
			}
		}
	}
	for _, name := range rn.links {
		link, err := rootNL.LinkByName(name)
		if err != nil {
			continue // went away with its peer's namespace
		}
		if err := rootNL.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("netlab: delete stale link %s: %w", name, err))
			continue
		}
		removed = append(removed, name)
	}
	for _, n := range rn.netns {
		if err := deleteNamedNetns(n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, n)
	}
	return removed, errors.Join(errs...)
}

// listLinks lists the links of nl's namespace, retrying a dump that the
// kernel interrupted because the list changed meanwhile.
func listLinks(nl *netlink.Handle) ([]netlink.Link, error) {
	for range 5 {
		links, err := nl.LinkList()
		if errors.Is(err, netlink.ErrDumpInterrupted) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("netlab: list links: %w", err)
		}
		return links, nil
	}
	return nil, fmt.Errorf("netlab: list links: %w", netlink.ErrDumpInterrupted)
}
