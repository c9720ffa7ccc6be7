package eviction

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// observe reads the machine's signals: memory from /proc/meminfo, the
// file systems of rootDir (nodefs) and imageFSDir (imagefs) with statfs.
// A signal that cannot be read is left out (never crossed).
func observe(rootDir, imageFSDir string) map[string]Observation {
	out := map[string]Observation{}
	if total, avail, ok := meminfo(); ok {
		out[MemoryAvailable] = Observation{Available: avail, Capacity: total}
	}
	for sig, dir := range map[string]string{NodeFSAvailable: rootDir, ImageFSAvailable: imageFSDir} {
		if dir == "" {
			continue
		}
		p := existingParent(dir)
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil || st.Blocks == 0 {
			continue
		}
		out[sig] = Observation{Available: int64(st.Bavail) * st.Bsize, Capacity: int64(st.Blocks) * st.Bsize, Path: p}
	}
	return out
}

func meminfo() (total, avail int64, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	total, avail = -1, -1
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, _ := strings.Cut(s.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "MemTotal":
			total = n << 10
		case "MemAvailable":
			avail = n << 10
		}
	}
	return total, avail, total > 0 && avail >= 0
}

// existingParent is p, or its nearest parent that exists.
func existingParent(p string) string {
	for {
		if _, err := os.Stat(p); err == nil || p == "/" || p == "." {
			return p
		}
		p = filepath.Dir(p)
	}
}
