// Package proc is the benchmark drivers' processes: starting and stopping
// them (Child), their CPU time and memory from /proc, and a free loopback
// address.
package proc

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Memory returns a process's resident set size (VmRSS) and its peak
// (VmHWM), in bytes.
func Memory(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	return rss, peak, nil
}

// RSS is the resident set size in bytes (0 if the process is gone).
func RSS(pid int) int64 {
	rss, _, _ := Memory(pid)
	return rss
}

// MiB formats bytes as "12.3 MiB".
func MiB(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
