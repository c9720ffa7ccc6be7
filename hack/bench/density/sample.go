package main

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	procfs "github.com/tugboat/tugboat/hack/bench/internal/proc"
	"github.com/tugboat/tugboat/hack/bench/internal/stats"
)

// sample is one reading of a series.
type sample struct {
	at time.Time
	v  float64
}

// sampler reads, until its context ends, every component's RSS each
// second and etcd's db size (from the Cluster.Status call, as tugctl
// cluster status shows it) every two seconds.
type sampler struct {
	mu     sync.Mutex
	rss    map[string][]sample
	dbSize []sample
	dbErr  error
}

func (s *sampler) run(ctx context.Context, c *client.Client, procs []*proc) {
	s.mu.Lock()
	s.rss = map[string][]sample{}
	s.mu.Unlock()
	cluster := v1.NewClusterClient(c.Conn())
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for i := 0; ; i++ {
		now := time.Now()
		s.mu.Lock()
		for _, p := range procs {
			if rss := procfs.RSS(p.Pid()); rss > 0 {
				s.rss[p.Name] = append(s.rss[p.Name], sample{now, float64(rss)})
			}
		}
		s.mu.Unlock()
		if i%2 == 0 {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := cluster.Status(sctx, &v1.ClusterStatusRequest{})
			cancel()
			s.mu.Lock()
			if err == nil {
				for _, m := range st.GetEtcdMembers() {
					if m.GetLeader() || len(st.GetEtcdMembers()) == 1 {
						s.dbSize = append(s.dbSize, sample{time.Now(), float64(m.GetDbSize())})
						break
					}
				}
			} else if ctx.Err() == nil {
				s.dbErr = err
			}
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// leaseWatch follows the leader-election Leases in kube-system (the
// scheduler's and the controller-manager's): the gaps between the renewal
// times their holders write, and how long after a renewal's date the
// bench's watch saw it (the renewal's own latency plus watch delivery).
// A gap near RenewDeadline (10 s) is a leader about to give up.
type leaseWatch struct {
	mu    sync.Mutex
	last  map[string]time.Time // renewTime last seen, by lease
	gaps  map[string][]time.Duration
	after map[string][]time.Duration
}

func (l *leaseWatch) run(ctx context.Context, c *client.Client) {
	l.mu.Lock()
	l.last, l.gaps, l.after = map[string]time.Time{}, map[string][]time.Duration{}, map[string][]time.Duration{}
	l.mu.Unlock()
	leases := client.For[*v1.Lease](c)
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, client.WatchOptions{Namespace: "kube-system"})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for {
			ev, err := w.Next()
			if err != nil {
				break
			}
			name := ev.Object.GetMetadata().GetName()
			if ev.Type == "BOOKMARK" || (name != "scheduler" && name != "controller-manager") {
				continue
			}
			seen := time.Now()
			rt := ev.Object.GetSpec().GetRenewTime().AsTime()
			l.mu.Lock()
			if last, ok := l.last[name]; ok && rt.After(last) {
				l.gaps[name] = append(l.gaps[name], rt.Sub(last))
			}
			if rt.After(l.last[name]) {
				l.last[name] = rt
				l.after[name] = append(l.after[name], seen.Sub(rt))
			}
			l.mu.Unlock()
		}
		w.Stop()
	}
}

type leaseStats struct {
	name           string
	renewals       int
	maxGap, p99Lag time.Duration
}

func (l *leaseWatch) result() []leaseStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []leaseStats
	for name, after := range l.after {
		st := leaseStats{name: name, renewals: len(after)}
		for _, g := range l.gaps[name] {
			st.maxGap = max(st.maxGap, g)
		}
		st.p99Lag = stats.Percentile(after, 99)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
