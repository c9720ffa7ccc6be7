package server

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// CPU use is a rate, so it needs two samples: Stats uses the previous
// call's samples when they are recent enough (minWindow..maxWindow old),
// else it samples twice, window apart.
const (
	minWindow = 200 * time.Millisecond
	maxWindow = 2 * time.Minute
	window    = 500 * time.Millisecond
	// clockTicks is USER_HZ, the unit of /proc/stat (100 on Linux).
	clockTicks = 100
)

type cpuSample struct {
	nanos uint64 // cumulative cpu time
	at    time.Time
}

type sampler struct {
	mu         sync.Mutex
	node       cpuSample
	containers map[string]cpuSample
}

func newSampler() *sampler { return &sampler{containers: map[string]cpuSample{}} }

// nodeCPU reads the node's busy cpu time from /proc/stat.
func nodeCPU() (cpuSample, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuSample{}, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return cpuSample{}, fmt.Errorf("/proc/stat: empty")
	}
	fields := strings.Fields(s.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return cpuSample{}, fmt.Errorf("/proc/stat: unexpected first line %q", s.Text())
	}
	var busy uint64
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already in user
			break
		}
		busy += v
	}
	return cpuSample{nanos: busy * uint64(time.Second) / clockTicks, at: time.Now()}, nil
}

func nodeMemoryUsed() int64 {
	total, avail := int64(-1), int64(-1)
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, _ := strings.Cut(s.Text(), ":")
		n, _ := strconv.ParseInt(strings.Fields(v + " 0")[0], 10, 64)
		switch k {
		case "MemTotal":
			total = n * 1024
		case "MemAvailable":
			avail = n * 1024
		}
	}
	if total < 0 || avail < 0 {
		return 0
	}
	return total - avail
}

func milli(prev, cur cpuSample) int64 {
	dt := cur.at.Sub(prev.at)
	if dt <= 0 || cur.nanos < prev.nanos {
		return 0
	}
	return int64(float64(cur.nanos-prev.nanos) / float64(dt.Nanoseconds()) * 1000)
}

func usable(prev cpuSample, now time.Time) bool {
	age := now.Sub(prev.at)
	return !prev.at.IsZero() && age >= minWindow && age <= maxWindow
}

type containerSample struct {
	c     runtime.ContainerStatus
	stats runtime.ContainerStats
}

func (s *Server) sampleContainers(ctx context.Context) ([]containerSample, error) {
	cs, err := s.cfg.Runtime.ListContainers(ctx, runtime.ContainerFilter{State: runtime.ContainerRunning})
	if err != nil {
		return nil, err
	}
	out := make([]containerSample, 0, len(cs))
	for _, c := range cs {
		st, err := s.cfg.Runtime.ContainerStats(ctx, c.ID)
		if err != nil {
			continue // exited meanwhile
		}
		out = append(out, containerSample{c, st})
	}
	return out, nil
}

// Stats implements NodeAPI.Stats: the node's and each pod's cpu (in
// millicores, over the sampling window) and memory (working set).
func (s *Server) Stats(ctx context.Context, req *v1.StatsRequest) (*v1.StatsResponse, error) {
	node, err := nodeCPU()
	if err != nil {
		return nil, errorf(apierrors.ErrUnavailable, "node stats: %v", err)
	}
	samples, err := s.sampleContainers(ctx)
	if err != nil {
		return nil, errorf(apierrors.ErrUnavailable, "container stats on node %s: %v", s.cfg.NodeName, err)
	}
	s.stats.mu.Lock()
	prevNode, prev := s.stats.node, s.stats.containers
	s.stats.mu.Unlock()
	if !usable(prevNode, node.at) {
		// No recent samples: take a second pair, window apart.
		prevNode = node
		prev = map[string]cpuSample{}
		for _, cs := range samples {
			prev[cs.c.ID] = cpuSample{cs.stats.CPUUsageNanos, cs.stats.Timestamp}
		}
		select {
		case <-ctx.Done():
			return nil, grpcErr(ctx.Err())
		case <-time.After(window):
		}
		if node, err = nodeCPU(); err != nil {
			return nil, errorf(apierrors.ErrUnavailable, "node stats: %v", err)
		}
		if samples, err = s.sampleContainers(ctx); err != nil {
			return nil, errorf(apierrors.ErrUnavailable, "container stats on node %s: %v", s.cfg.NodeName, err)
		}
	}
	resp := &v1.StatsResponse{
		NodeName: s.cfg.NodeName,
		Time:     timestamppb.New(node.at),
		Node:     &v1.ResourceUsage{CpuMilli: milli(prevNode, node), MemoryBytes: nodeMemoryUsed()},
	}
	next := map[string]cpuSample{}
	pods := map[string]*v1.PodStats{}
	var order []string
	for _, cs := range samples {
		cur := cpuSample{cs.stats.CPUUsageNanos, cs.stats.Timestamp}
		next[cs.c.ID] = cur
		u := &v1.ResourceUsage{MemoryBytes: int64(cs.stats.MemoryWorkingSetBytes)}
		if p, ok := prev[cs.c.ID]; ok {
			u.CpuMilli = milli(p, cur)
		}
		key := cs.c.Pod.Namespace + "/" + cs.c.Pod.Name
		ps := pods[key]
		if ps == nil {
			ps = &v1.PodStats{Namespace: cs.c.Pod.Namespace, Name: cs.c.Pod.Name, Usage: &v1.ResourceUsage{}, Containers: map[string]*v1.ResourceUsage{}}
			pods[key] = ps
			order = append(order, key)
		}
		ps.Containers[cs.c.Name] = u
		ps.Usage.CpuMilli += u.CpuMilli
		ps.Usage.MemoryBytes += u.MemoryBytes
	}
	for _, k := range sortStrings(order) {
		resp.Pods = append(resp.Pods, pods[k])
	}
	s.stats.mu.Lock()
	s.stats.node, s.stats.containers = node, next
	s.stats.mu.Unlock()
	return resp, nil
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}
