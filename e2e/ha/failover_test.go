package ha

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// writer writes ConfigMaps at a steady rate through a client of every
// apiserver and remembers what was acknowledged: a create or an update
// that returned is stored at the version it returned. A write whose answer
// was lost (the apiserver died with it in flight) is uncertain: it may or
// may not be stored, and the test allows for exactly those.
type writer struct {
	api *client.Typed[*v1.ConfigMap]

	mu        sync.Mutex
	acked     map[int64]string // resource version -> name
	uncertain int
	failed    []string
	ackTimes  []time.Time
	n         int
}

func (w *writer) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var got *v1.ConfigMap
		var err error
		name := "cm-" + strconv.Itoa(i)
		if i%3 == 2 {
			// Every third write updates the previous object.
			name = "cm-" + strconv.Itoa(i-1)
			var cur *v1.ConfigMap
			if cur, err = w.api.Get(wctx, "default", name); err == nil {
				cur.Data = map[string]string{"n": strconv.Itoa(i)}
				got, err = w.api.Update(wctx, cur)
			}
		} else {
			got, err = w.api.Create(wctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name,
				Labels: map[string]string{"e2e": "ha-writes"}}, Data: map[string]string{"n": strconv.Itoa(i)}})
		}
		cancel()
		w.mu.Lock()
		switch {
		case err == nil:
			w.acked[got.Metadata.ResourceVersion] = name
			w.ackTimes = append(w.ackTimes, time.Now())
			w.n++
		case ctx.Err() != nil || errors.Is(err, apierrors.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
			status.Code(err) == codes.DeadlineExceeded || apierrors.IsNotFound(err):
			// Lost with its apiserver (or the update's object was an
			// uncertain create that did not happen), out of time (the
			// 5 s deadline, as a gRPC status from either side, while
			// etcd elects or the apiserver's etcd client moves to a
			// member that is left), or cut short by the end of the test.
			w.uncertain++
		default:
			w.failed = append(w.failed, fmt.Sprintf("%s: %v", name, err))
		}
		w.mu.Unlock()
	}
}

func (w *writer) acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// waitAcks waits for n more acknowledged writes than now.
func (w *writer) waitAcks(t *testing.T, n int) {
	t.Helper()
	want := w.acks() + n
	err := wait.Until(context.Background(), 60*time.Second, func(context.Context) error {
		if got := w.acks(); got < want {
			return fmt.Errorf("%d acknowledged writes, want %d", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// seen is what an informer's handlers were told, in order.
type seen struct {
	mu     sync.Mutex
	events []string           // "ADDED cm-1 rv"
	byRV   map[int64][]string // resource version -> events with it
}

func (s *seen) add(typ string, cm *v1.ConfigMap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := cm.GetMetadata().GetResourceVersion()
	e := fmt.Sprintf("%s %s %d", typ, cm.GetMetadata().GetName(), rv)
	s.events = append(s.events, e)
	s.byRV[rv] = append(s.byRV[rv], e)
}

// TestInformerAcrossAPIServerKill: two apiservers on a 3-member etcd; an
// informer and a writer (50 writes/s) use one client with both addresses.
// Each apiserver in turn is killed (SIGKILL) while writes continue, and the
// first one brought back before the second dies. The informer must see
// every acknowledged write exactly once, no version twice, and end equal to
// what etcd holds; tugctl with both addresses keeps working after each kill.
func TestInformerAcrossAPIServerKill(t *testing.T) {
	cp := startControlPlane(t, 3, 2)
	c := cp.Client()
	cms := client.For[*v1.ConfigMap](c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s, inf := watchWrites(t, ctx, cms)
	w, stopWriter := startWriter(ctx, cms)
	w.waitAcks(t, 100)
	for round, victim := range []int{0, 1} {
		killed := time.Now()
		cp.apiservers[victim].kill()
		t.Logf("round %d: killed %s (pid gone) after %d acknowledged writes", round, cp.apiservers[victim].name, w.acks())
		w.waitAcks(t, 100)
		w.mu.Lock()
		t.Logf("round %d: writes continue on the other apiserver (first acknowledged %v after the kill, longest pause between acknowledged writes %v); %d uncertain so far",
			round, firstAfter(w.ackTimes, killed), longestGap(w.ackTimes, killed.Add(-time.Second)), w.uncertain)
		w.mu.Unlock()
		out, err := cp.tugctl(cp.Servers(), "get", "configmaps", "-l", "e2e=ha-writes")
		if err != nil || !strings.Contains(out, "cm-0") {
			t.Fatalf("round %d: tugctl get configmaps with --server %s after killing %s: %v\n%s", round, cp.Servers(), cp.apiservers[victim].name, err, out)
		}
		if victim == 0 {
			cp.apiservers[0].start()
			cp.waitAPIServer(0)
			t.Logf("round %d: %s is back", round, cp.apiservers[0].name)
			w.waitAcks(t, 50)
		}
	}
	stopWriter()
	checkWritesSeen(t, w, s, inf, cms)
}

// watchWrites runs an informer of the writer's ConfigMaps that records
// every event it delivers, until ctx ends.
func watchWrites(t *testing.T, ctx context.Context, cms *client.Typed[*v1.ConfigMap]) (*seen, *informer.Informer[*v1.ConfigMap]) {
	t.Helper()
	s := &seen{byRV: map[int64][]string{}}
	inf := informer.New(cms, informer.Options{Namespace: "default", LabelSelector: "e2e=ha-writes"})
	inf.AddHandler(informer.Handler[*v1.ConfigMap]{
		OnAdd:    func(o *v1.ConfigMap) { s.add("ADDED", o) },
		OnUpdate: func(_, o *v1.ConfigMap) { s.add("MODIFIED", o) },
		OnDelete: func(o *v1.ConfigMap) { s.add("DELETED", o) },
	})
	go func() { _ = inf.Run(ctx) }()
	if !inf.WaitForSync(ctx) {
		t.Fatal("informer did not sync")
	}
	return s, inf
}

// startWriter writes 50 ConfigMaps a second until stop is called (which
// waits for it to end).
func startWriter(ctx context.Context, cms *client.Typed[*v1.ConfigMap]) (w *writer, stop func()) {
	w = &writer{api: cms, acked: map[int64]string{}}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.run(wctx, 20*time.Millisecond); close(done) }()
	return w, func() { cancel(); <-done }
}

// checkWritesSeen asserts, once the writer has stopped, that the informer
// saw every acknowledged write exactly once, no version twice, at most the
// uncertain writes besides, and ends equal to what etcd holds; and that
// every acknowledged write is stored.
func checkWritesSeen(t *testing.T, w *writer, s *seen, inf *informer.Informer[*v1.ConfigMap], cms *client.Typed[*v1.ConfigMap]) {
	t.Helper()
	ctx := context.Background()

	// Everything etcd holds, read through the surviving apiserver, equals
	// the informer's cache (a write the end of the test cut short may land
	// just after: list until the two agree).
	var stored []*v1.ConfigMap
	err := wait.Until(ctx, 30*time.Second, func(ctx context.Context) error {
		var rv int64
		var err error
		stored, rv, err = cms.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "e2e=ha-writes"})
		if err != nil {
			return err
		}
		if got := inf.ResourceVersion(); got < rv {
			return fmt.Errorf("informer at version %d, the list at %d", got, rv)
		}
		if len(stored) != len(inf.List()) {
			return fmt.Errorf("etcd holds %d ConfigMaps, the informer %d", len(stored), len(inf.List()))
		}
		for _, o := range stored {
			got, ok := inf.Get(v1.Key(o))
			if !ok || got.GetMetadata().GetResourceVersion() != o.GetMetadata().GetResourceVersion() {
				return fmt.Errorf("%s: stored at version %d, the informer has %v", v1.Key(o), o.GetMetadata().GetResourceVersion(), got.GetMetadata().GetResourceVersion())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.failed) > 0 {
		t.Errorf("%d writes failed with an error other than Unavailable: %v", len(w.failed), w.failed)
	}
	// No version delivered twice.
	for rv, evs := range s.byRV {
		if len(evs) > 1 {
			t.Errorf("version %d delivered %d times: %v", rv, len(evs), evs)
		}
	}
	// Every acknowledged write seen.
	missed := 0
	for rv, name := range w.acked {
		if len(s.byRV[rv]) == 0 {
			missed++
			if missed <= 10 {
				t.Errorf("acknowledged write of %s at version %d never reached the informer", name, rv)
			}
		}
	}
	// Only the uncertain writes may have been seen without an ack.
	unacked := 0
	for rv := range s.byRV {
		if _, ok := w.acked[rv]; !ok {
			unacked++
		}
	}
	if unacked > w.uncertain {
		t.Errorf("%d events of writes never acknowledged, but only %d writes were uncertain", unacked, w.uncertain)
	}
	// Every acknowledged write is stored (the newest version of each name).
	newest := map[string]int64{}
	for rv, name := range w.acked {
		newest[name] = max(newest[name], rv)
	}
	for _, o := range stored {
		delete(newest, o.GetMetadata().GetName())
	}
	for name := range newest {
		t.Errorf("acknowledged %s is not stored", name)
	}
	t.Logf("%d acknowledged writes, %d uncertain, %d events seen, %d objects stored, missed %d",
		len(w.acked), w.uncertain, len(s.events), len(stored), missed)
}

// firstAfter is how long after t the first of times came.
func firstAfter(times []time.Time, t time.Time) time.Duration {
	for _, x := range times {
		if x.After(t) {
			return x.Sub(t).Round(time.Millisecond)
		}
	}
	return -1
}

// longestGap is the longest interval between consecutive times after t.
func longestGap(times []time.Time, t time.Time) time.Duration {
	var gap time.Duration
	for i := 1; i < len(times); i++ {
		if times[i-1].After(t) {
			gap = max(gap, times[i].Sub(times[i-1]))
		}
	}
	return gap.Round(time.Millisecond)
}
