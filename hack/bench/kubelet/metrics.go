package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// histograms reads the _sum and _count of the kubelet's latency
// histograms from its /metrics, by series ("name{labels}").
func histograms(url string) (map[string][2]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string][2]float64{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "tugboat_kubelet_") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		series, labels, _ := strings.Cut(name, "{")
		if labels != "" {
			labels = "{" + labels
		}
		switch {
		case strings.HasSuffix(series, "_seconds_sum"):
			k := strings.TrimSuffix(series, "_seconds_sum") + labels
			e := out[k]
			e[0] = v
			out[k] = e
		case strings.HasSuffix(series, "_seconds_count"):
			k := strings.TrimSuffix(series, "_seconds_count") + labels
			e := out[k]
			e[1] = v
			out[k] = e
		}
	}
	return out, s.Err()
}

// printBreakdown prints, per series, how many calls happened between two
// scrapes, their mean and their total time.
func printBreakdown(before, after map[string][2]float64) {
	type row struct {
		name         string
		n            float64
		mean, totalD time.Duration
	}
	var rows []row
	for k, a := range after {
		b := before[k]
		n := a[1] - b[1]
		if n <= 0 {
			continue
		}
		total := time.Duration((a[0] - b[0]) * float64(time.Second))
		rows = append(rows, row{strings.TrimPrefix(k, "tugboat_kubelet_"), n, total / time.Duration(n), total})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].totalD > rows[j].totalD })
	fmt.Printf("\nwhere the kubelet's time went during the burst (its own histograms; calls overlap):\n")
	fmt.Printf("%-62s %6s %10s %10s\n", "series", "calls", "mean", "total")
	for _, r := range rows {
		fmt.Printf("%-62s %6.0f %10s %10s\n", r.name, r.n, r.mean.Round(100*time.Microsecond), r.totalD.Round(time.Millisecond))
	}
}

// cpuSnapshot is the CPU time used so far by the processes that start
// pods: the kubelet (with the CNI plugins it ran natively), the apiserver
// (with etcd), containerd (with the CNI plugins it ran under CRI), and every containerd shim of this cluster (with the
// runc runs it reaped).
type cpuSnapshot map[string]time.Duration

func (b *bench) cpu() cpuSnapshot {
	pids := b.c.PIDs()
	s := cpuSnapshot{
		"kubelet":   procCPUWithChildren(b.node.PID()),
		"apiserver": procCPU(pids["apiserver"]),
		// With the CNI plugins it ran under CRI (its children).
		"containerd": procCPUWithChildren(b.node.Containerd.PID),
	}
	s["shims"] = shimsCPU(b.node.Containerd.Address)
	return s
}

// shimsCPU sums the CPU time (own and reaped children's) of the shims
// serving the containerd at address.
func shimsCPU(address string) time.Duration {
	entries, _ := os.ReadDir("/proc")
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(cmd), "containerd-shim") && strings.Contains(string(cmd), address) {
			total += procCPUWithChildren(pid)
		}
	}
	return total
}

func (a cpuSnapshot) minus(b cpuSnapshot) cpuSnapshot {
	out := cpuSnapshot{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	return out
}

func (s cpuSnapshot) String() string {
	keys := []string{"kubelet", "apiserver", "containerd", "shims", "script", "crictl"}
	var parts []string
	var total time.Duration
	for _, k := range keys {
		if v, ok := s[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", k, v.Round(10*time.Millisecond)))
			total += v
		}
	}
	return fmt.Sprintf("%s total (%s)", total.Round(10*time.Millisecond), strings.Join(parts, ", "))
}
