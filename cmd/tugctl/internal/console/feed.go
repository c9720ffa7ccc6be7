package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// batchInterval is how often a page gets the changes since the last
// batch: each object's latest state once, however often it changed.
const batchInterval = 250 * time.Millisecond

// snapshotEvents is how many of the newest events a new page gets.
const snapshotEvents = 500

// change is one object's new state (Obj nil: deleted), or a kind's
// status (Kind "_kind": Key the kind, Obj its kindStatus).
type change struct {
	Kind string `json:"k"`
	Key  string `json:"id"`
	Obj  any    `json:"o,omitempty"`
}

// kindStatus says whether a kind is listed yet, or why it cannot be.
type kindStatus struct {
	Synced    bool   `json:"synced"`
	Forbidden string `json:"forbidden,omitempty"`
	Error     string `json:"error,omitempty"`
}

// feed keeps a summary of every object the user may list, from one
// informer per kind, and fans changes out to the pages.
type feed struct {
	c   *client.Client
	log *slog.Logger

	mu     sync.Mutex
	state  map[string]map[string]any // kind -> key -> summary
	status map[string]kindStatus
	subs   map[*subscriber]struct{}

	// Counters for the charts.
	watchEvents atomic.Int64
	podsBound   atomic.Int64
	startups    startupWindow
}

// subscriber is one page's pending changes.
type subscriber struct {
	pending map[string]change // "kind/key" -> latest
	wake    chan struct{}
}

func newFeed(c *client.Client, log *slog.Logger) *feed {
	return &feed{c: c, log: log, state: map[string]map[string]any{}, status: map[string]kindStatus{}, subs: map[*subscriber]struct{}{}}
}

// The kinds the console shows, by the name the page uses.
const (
	kindNamespaces = "namespaces"
	kindNodes      = "nodes"
	kindPods       = "pods"
	kindServices   = "services"
	kindEndpoints  = "endpoints"
	kindEvents     = "events"
	kindWorkloads  = "workloads"
	kindSecrets    = "secrets"
	kindConfigMaps = "configmaps"
	kindIngresses  = "ingresses"
	workloadKeySep = "/"
)

// run starts one informer per kind and returns when ctx ends.
func (f *feed) run(ctx context.Context) {
	var wg sync.WaitGroup
	start := func(fn func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); fn(ctx) }()
	}
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindNamespaces, "", func(n *v1.Namespace) any { return namedSummary{Name: n.GetMetadata().GetName()} }, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindNodes, "", func(n *v1.Node) any { return summarizeNode(n) }, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindPods, "", func(p *v1.Pod) any { return summarizePod(p, time.Now()) }, f.podChanged)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindServices, "", func(s *v1.Service) any { return summarizeService(s) }, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindEndpoints, "", func(e *v1.Endpoints) any { return summarizeEndpoints(e) }, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindEvents, "", func(e *v1.Event) any { return summarizeEvent(e) }, nil)
	})
	workload := func(o v1.Object) any { return summarizeWorkload(o) }
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindWorkloads, "Deployment", func(o *v1.Deployment) any { return workload(o) }, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindWorkloads, "ReplicaSet", func(o *v1.ReplicaSet) any { return workload(o) }, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindWorkloads, "StatefulSet", func(o *v1.StatefulSet) any { return workload(o) }, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindWorkloads, "DaemonSet", func(o *v1.DaemonSet) any { return workload(o) }, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindWorkloads, "Job", func(o *v1.Job) any { return workload(o) }, nil)
	})
	start(func(ctx context.Context) {
		// Names and types only: a Secret's data never leaves the feed.
		watchKind(ctx, f, kindSecrets, "", func(s *v1.Secret) any {
			return namedSummary{Namespace: s.GetMetadata().GetNamespace(), Name: s.GetMetadata().GetName(), Type: s.GetType()}
		}, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindIngresses, "", func(i *v1.Ingress) any {
			return namedSummary{Namespace: i.GetMetadata().GetNamespace(), Name: i.GetMetadata().GetName()}
		}, nil)
	})
	start(func(ctx context.Context) {
		watchKind(ctx, f, kindConfigMaps, "", func(c *v1.ConfigMap) any {
			return namedSummary{Namespace: c.GetMetadata().GetNamespace(), Name: c.GetMetadata().GetName()}
		}, nil)
	})
	wg.Wait()
}

// watchKind lists and watches one kind with the user's client and keeps
// its summaries in the feed. A kind the user may not list is marked
// forbidden with the apiserver's message and not watched. sub names a
// kind that shares a feed kind (the workloads) and prefixes its keys.
func watchKind[T v1.Object](ctx context.Context, f *feed, kind, sub string, summarize func(T) any, onChange func(old, new T)) {
	api := client.For[T](f.c)
	statusKey := kind
	if sub != "" {
		statusKey = kind + workloadKeySep + sub
	}
	// One page of one object says whether the user may list the kind
	// (client.Typed.List would fetch every page: 5,000 round trips for
	// 5,000 pods); the informer lists them all next.
	_, err := f.c.Objects().List(ctx, &v1.ListRequest{Kind: api.Kind().Name, Limit: 1})
	err = apierrors.FromGRPC(err)
	switch {
	case errors.Is(err, apierrors.ErrForbidden):
		f.setStatus(statusKey, kindStatus{Synced: true, Forbidden: err.Error()})
		f.log.Info("kind forbidden for this user", "kind", api.Kind().Plural, "err", err)
		return
	case err != nil && ctx.Err() == nil:
		// Not fatal: the informer retries; the page shows why meanwhile.
		f.setStatus(statusKey, kindStatus{Error: err.Error()})
	}
	key := func(o T) string {
		m := o.GetMetadata()
		k := m.GetName()
		if m.GetNamespace() != "" {
			k = m.GetNamespace() + "/" + k
		}
		if sub != "" {
			k = sub + workloadKeySep + k
		}
		return k
	}
	inf := informer.New(api, informer.Options{Logger: f.log})
	inf.AddHandler(informer.Handler[T]{
		OnAdd: func(o T) {
			f.put(kind, key(o), summarize(o))
			if onChange != nil {
				var zero T
				onChange(zero, o)
			}
		},
		OnUpdate: func(old, o T) {
			f.put(kind, key(o), summarize(o))
			if onChange != nil {
				onChange(old, o)
			}
		},
		OnDelete: func(o T) { f.put(kind, key(o), nil) },
	})
	go func() {
		if inf.WaitForSync(ctx) {
			f.setStatus(statusKey, kindStatus{Synced: true})
		}
	}()
	_ = inf.Run(ctx)
}

// podChanged counts bindings and startup latencies for the charts.
func (f *feed) podChanged(old, p *v1.Pod) {
	var oldNode string
	oldReady := false
	if old != nil {
		oldNode = old.GetSpec().GetNodeName()
		oldReady = table.ConditionStatus(old.GetStatus().GetConditions(), "Ready") == "True"
	}
	if oldNode == "" && p.GetSpec().GetNodeName() != "" && old != nil {
		f.podsBound.Add(1)
	}
	if c := table.Condition(p.GetStatus().GetConditions(), "Ready"); old != nil && !oldReady && c.GetStatus() == "True" && c.GetLastTransitionTime() != nil {
		f.startups.add(c.GetLastTransitionTime().AsTime().Sub(p.GetMetadata().GetCreationTimestamp().AsTime()))
	}
}

// put records an object's summary (nil: deleted) and queues it for
// every page.
func (f *feed) put(kind, key string, obj any) {
	f.watchEvents.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.state[kind]
	if m == nil {
		m = map[string]any{}
		f.state[kind] = m
	}
	if obj == nil {
		delete(m, key)
	} else {
		m[key] = obj
	}
	f.queueLocked(change{Kind: kind, Key: key, Obj: obj})
}

func (f *feed) setStatus(kind string, s kindStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[kind] = s
	f.queueLocked(change{Kind: "_kind", Key: kind, Obj: s})
}

func (f *feed) queueLocked(ch change) {
	for s := range f.subs {
		s.pending[ch.Kind+"/"+ch.Key] = ch
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// get returns the summary of kind/key.
func (f *feed) get(kind, key string) (any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.state[kind][key]
	return o, ok
}

// snapshot is what a page starts from.
type snapshot struct {
	Objects map[string]map[string]any `json:"objects"`
	Status  map[string]kindStatus     `json:"status"`
	Batch   string                    `json:"batchInterval"`
}

// subscribe registers a page and returns its starting snapshot.
func (f *feed) subscribe() (*subscriber, *snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &subscriber{pending: map[string]change{}, wake: make(chan struct{}, 1)}
	f.subs[s] = struct{}{}
	snap := &snapshot{Objects: map[string]map[string]any{}, Status: map[string]kindStatus{}, Batch: batchInterval.String()}
	for k, m := range f.state {
		c := make(map[string]any, len(m))
		for key, o := range m {
			c[key] = o
		}
		snap.Objects[k] = c
	}
	for k, st := range f.status {
		snap.Status[k] = st
	}
	if evs, ok := snap.Objects[kindEvents]; ok {
		snap.Objects[kindEvents] = newestEvents(evs, snapshotEvents)
	}
	return s, snap
}

func (f *feed) unsubscribe(s *subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, s)
}

// take returns and clears a page's pending changes.
func (f *feed) take(s *subscriber) []change {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	out := make([]change, 0, len(s.pending))
	for _, ch := range s.pending {
		out = append(out, ch)
	}
	clear(s.pending)
	return out
}

// newestEvents keeps the n newest events of m.
func newestEvents(m map[string]any, n int) map[string]any {
	if len(m) <= n {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]].(eventSummary).Time.After(m[keys[j]].(eventSummary).Time) })
	out := make(map[string]any, n)
	for _, k := range keys[:n] {
		out[k] = m[k]
	}
	return out
}

// serveFeed is GET /api/feed: Server-Sent Events, first "snapshot", then
// a "batch" of changes at most every batchInterval.
func (s *server) serveFeed(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "console: streaming unsupported", http.StatusInternalServerError)
		return
	}
	sub, snap := s.feed.subscribe()
	defer s.feed.unsubscribe(sub)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	if err := writeSSE(w, "snapshot", snap); err != nil {
		return
	}
	fl.Flush()
	heartbeat := time.NewTicker(15 * time.Second)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			fl.Flush()
			continue
		case <-sub.wake:
		}
		// Let the batch fill: every change of the next interval goes
		// out together, each object once.
		select {
		case <-r.Context().Done():
			return
		case <-time.After(batchInterval):
		}
		if batch := s.feed.take(sub); len(batch) > 0 {
			if err := writeSSE(w, "batch", batch); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

func writeSSE(w http.ResponseWriter, event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	return err
}

// startupWindow keeps the latest pod startup latencies (created → Ready).
type startupWindow struct {
	mu   sync.Mutex
	last []time.Duration
}

func (w *startupWindow) add(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = append(w.last, d)
	if len(w.last) > 100 {
		w.last = w.last[len(w.last)-100:]
	}
}

// median is the median of the window, in seconds (0: none yet).
func (w *startupWindow) median() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.last) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), w.last...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Seconds()
}
