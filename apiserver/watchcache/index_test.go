package watchcache

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/tugboat/tugboat/api/fields"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// readyCache is a pod cache with the spec.nodeName index that events are
// published to directly (what Run does after decoding etcd's).
func readyCache(t testing.TB, cfg Config) *Cache {
	k, err := kinds.Lookup("Pod")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Index = PodNodeName
	c := New(k, nil, cfg)
	c.markReady()
	return c
}

func pod(name, node string) *v1.Pod {
	return &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"}, Spec: &v1.PodSpec{NodeName: node}}
}

// queued takes what w has been handed so far, without blocking: its
// backlog, then its queue.
func queued(w *Watcher) []int64 {
	var revs []int64
	for _, e := range w.backlog {
		revs = append(revs, e.Rev)
	}
	w.backlog = nil
	for {
		select {
		case e := <-w.ch:
			revs = append(revs, e.Rev)
		default:
			return revs
		}
	}
}

// TestIndexedFanOut: an indexed watcher is handed exactly the events whose
// object has its value now or had it before (a bind from "" to n1 goes to
// both the "" and the n1 watchers), from the backlog as live; an unindexed
// watcher every event; a stopped watcher leaves the index.
func TestIndexedFanOut(t *testing.T) {
	ctx := context.Background()
	c := readyCache(t, Config{})
	all, err := c.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ws := map[string]*Watcher{}
	for _, v := range []string{"", "n1", "n2", "n3"} {
		if ws[v], err = c.WatchIndexed(ctx, 0, v); err != nil {
			t.Fatal(err)
		}
	}
	evs := []*Event{
		{Type: Added, Obj: pod("a", ""), Rev: 1},                          // created unscheduled
		{Type: Modified, Obj: pod("a", "n1"), Prev: pod("a", ""), Rev: 2}, // bound to n1
		{Type: Added, Obj: pod("b", "n2"), Rev: 3},                        // created bound
		{Type: Modified, Obj: pod("a", "n1"), Prev: pod("a", "n1"), Rev: 4},
		{Type: Deleted, Obj: pod("b", "n2"), Prev: pod("b", "n2"), Rev: 5},
	}
	c.publish(evs)
	want := map[string][]int64{"": {1, 2}, "n1": {2, 4}, "n2": {3, 5}, "n3": nil}
	for v, w := range ws {
		if got := queued(w); !slices.Equal(got, want[v]) {
			t.Errorf("watcher of spec.nodeName=%q was handed revisions %v, want %v", v, got, want[v])
		}
	}
	if got := queued(all); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("unindexed watcher was handed %v, want every revision", got)
	}

	// From the ring: a watch from revision 1 gets n1's later events only.
	late, err := c.WatchIndexed(ctx, 1, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if got := queued(late); !slices.Equal(got, []int64{2, 4}) {
		t.Errorf("backlog of a spec.nodeName=n1 watcher from revision 1: %v, want [2 4]", got)
	}

	for _, w := range append([]*Watcher{all, late}, ws[""], ws["n1"], ws["n2"], ws["n3"]) {
		w.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.watchers) != 0 || len(c.unindexed) != 0 || len(c.indexed) != 0 {
		t.Errorf("after every Stop: %d watchers, %d unindexed, %d index values left", len(c.watchers), len(c.unindexed), len(c.indexed))
	}
}

// TestIndexedWatcherCutOff: an indexed watcher that falls behind is cut
// off with ErrTooSlow and leaves the index, as an unindexed one does.
func TestIndexedWatcherCutOff(t *testing.T) {
	c := readyCache(t, Config{QueueSize: 2})
	w, err := c.WatchIndexed(context.Background(), 0, "n1")
	if err != nil {
		t.Fatal(err)
	}
	var evs []*Event
	for i := range 3 {
		evs = append(evs, &Event{Type: Added, Obj: pod(fmt.Sprint(i), "n1"), Rev: int64(i + 1)})
	}
	c.publish(evs)
	select {
	case <-w.done:
	default:
		t.Fatal("a watcher 3 events behind with a queue of 2 was not cut off")
	}
	if w.err == nil {
		t.Error("cut-off watcher has no error")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.indexed) != 0 {
		t.Errorf("cut-off watcher still indexed: %v", c.indexed)
	}
}

// BenchmarkFanOut is the cost of one pod event with N node watchers, each
// a kubelet's (spec.nodeName=<node>) consumed by its own goroutine that
// applies its field selector as the apiserver's Watch does: ns/op is
// per event, from publish until every watcher it was handed to has
// processed it. "unindexed" is the fan-out without the index (every
// watcher gets every event), "indexed" with it.
//
//	go test -run '^$' -bench FanOut ./apiserver/watchcache/
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		for _, indexed := range []bool{false, true} {
			name := fmt.Sprintf("watchers=%d/unindexed", n)
			if indexed {
				name = fmt.Sprintf("watchers=%d/indexed", n)
			}
			b.Run(name, func(b *testing.B) { benchFanOut(b, n, indexed) })
		}
	}
}

func benchFanOut(b *testing.B, n int, indexed bool) {
	c := readyCache(b, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pending atomic.Int64
	caughtUp := make(chan struct{}, 1)
	var matched atomic.Int64
	for i := range n {
		node := fmt.Sprintf("node-%d", i)
		var w *Watcher
		var err error
		if indexed {
			w, err = c.WatchIndexed(ctx, 0, node)
		} else {
			w, err = c.Watch(ctx, 0)
		}
		if err != nil {
			b.Fatal(err)
		}
		sel, err := fields.Parse("spec.nodeName=" + node)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for {
				e, err := w.Next(ctx)
				if err != nil {
					return
				}
				if sel.Matches(e.Obj) || sel.Matches(e.Prev) {
					matched.Add(1)
				}
				if pending.Add(-1) == 0 {
					caughtUp <- struct{}{}
				}
			}
		}()
	}
	handed := 0
	b.ResetTimer()
	for i := range b.N {
		p := pod("p", fmt.Sprintf("node-%d", i%n))
		c.mu.Lock()
		c.setRevLocked(int64(i + 1))
		k := c.fanOut(&Event{Type: Modified, Obj: p, Prev: p, Rev: int64(i + 1), size: 100})
		c.mu.Unlock()
		handed += k
		if pending.Add(int64(k)) != 0 {
			<-caughtUp
		}
	}
	b.StopTimer()
	if got := matched.Load(); got != int64(b.N) {
		b.Fatalf("%d events matched a watcher's selector, want %d", got, b.N)
	}
	b.ReportMetric(float64(handed)/float64(b.N), "handed/event")
}
