package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// collect reads n non-bookmark events from w.
func collect[T v1.Object](t *testing.T, w *client.Watcher[T], n int) []client.Event[T] {
	t.Helper()
	var out []client.Event[T]
	done := make(chan error, 1)
	go func() {
		for len(out) < n {
			ev, err := w.Next()
			if err != nil {
				done <- err
				return
			}
			if ev.Type == "BOOKMARK" {
				continue
			}
			out = append(out, ev)
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch: %v (after %d events)", err, len(out))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out after %d of %d events", len(out), n)
	}
	return out
}

func TestWatchOrderAndResume(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	cms := client.For[*v1.ConfigMap](s.Client)
	_, rv0, err := cms.List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, client.WatchOptions{ResourceVersion: rv0})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := 0; i < 20; i++ {
		if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: fmt.Sprint("c", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Delete(ctx, "default", "c3", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, w, 21)
	var last int64
	for i, ev := range evs[:20] {
		if ev.Type != "ADDED" || ev.Object.Metadata.Name != fmt.Sprint("c", i) || ev.ResourceVersion <= last {
			t.Fatalf("event %d: %s %s rv %d (last %d)", i, ev.Type, ev.Object.Metadata.Name, ev.ResourceVersion, last)
		}
		last = ev.ResourceVersion
	}
	if evs[20].Type != "DELETED" || evs[20].Object.Metadata.Name != "c3" {
		t.Fatalf("want DELETED c3, got %s %s", evs[20].Type, evs[20].Object.Metadata.Name)
	}
	// Resume from the middle: exactly the events after that version.
	mid := evs[9].ResourceVersion
	w2, err := cms.Watch(ctx, client.WatchOptions{ResourceVersion: mid})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	evs2 := collect(t, w2, 11)
	if evs2[0].Object.Metadata.Name != "c10" || evs2[10].Type != "DELETED" {
		t.Fatalf("resume: first %s, last %s", evs2[0].Object.Metadata.Name, evs2[10].Type)
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	w, err := pods.Watch(ctx, client.WatchOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p, err := pods.Create(ctx, newPod("p", map[string]string{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	// Not yet on n1: nothing. Bind makes it match: ADDED.
	if _, err := s.Client.Bind(ctx, "default", "p", "n1", 0); err != nil {
		t.Fatal(err)
	}
	p, _ = pods.Get(ctx, "default", "p")
	p.Metadata.Labels = map[string]string{"app": "db"}
	if _, err := pods.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, w, 2)
	if evs[0].Type != "ADDED" || evs[1].Type != "DELETED" {
		t.Fatalf("want ADDED then DELETED, got %s, %s", evs[0].Type, evs[1].Type)
	}
}

func TestWatchExpiredAfterCompaction(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	cms := client.For[*v1.ConfigMap](s.Client)
	first, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	var lastRV int64
	for i := 0; i < 5; i++ {
		c, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: fmt.Sprint("b", i)}})
		if err != nil {
			t.Fatal(err)
		}
		lastRV = c.Metadata.ResourceVersion
	}
	if err := s.Compact(ctx, lastRV); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, client.WatchOptions{ResourceVersion: first.Metadata.ResourceVersion})
	if err == nil {
		_, err = w.Next()
		w.Stop()
	}
	if !apierrors.IsExpired(err) {
		t.Fatalf("want Expired, got %v", err)
	}
	// A re-list gives a version that works.
	_, rv, err := cms.List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err = cms.Watch(ctx, client.WatchOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "after"}}); err != nil {
		t.Fatal(err)
	}
	if evs := collect(t, w, 1); evs[0].Object.Metadata.Name != "after" {
		t.Fatalf("got %s", evs[0].Object.Metadata.Name)
	}
}

func TestSlowWatcherIsCutOffOthersContinue(t *testing.T) {
	s := apiservertest.Start(t, func(c *apiserver.Config) { c.WatchQueueSize = 10 })
	ctx := ctxT(t)
	cms := client.For[*v1.ConfigMap](s.Client)
	// The slow watcher never reads; gRPC flow control fills up, then its
	// server-side queue, and the server cuts it off.
	slowCtx, cancelSlow := context.WithCancel(ctx)
	defer cancelSlow()
	slow, err := cms.Watch(slowCtx, client.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fast, err := cms.Watch(ctx, client.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	const n = 400
	big := map[string]string{"pad": string(make([]byte, 16<<10))}
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: fmt.Sprint("c", i)}, Data: big}); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	evs := collect(t, fast, n)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(evs) != n {
		t.Fatalf("fast watcher got %d events", len(evs))
	}
	// The slow one, read now, ends in ErrTooSlow after what it had buffered.
	var got int
	for {
		_, err := slow.Next()
		if err != nil {
			if !apierrors.IsTooSlow(err) {
				t.Fatalf("slow watcher ended with %v, want ResourceExhausted/too slow", err)
			}
			break
		}
		got++
		if got > n {
			t.Fatal("slow watcher was never cut off")
		}
	}
	if got >= n {
		t.Fatalf("slow watcher received all %d events; expected a cut-off", got)
	}
}

func TestBookmarksKeepIdleWatcherCurrent(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	cms := client.For[*v1.ConfigMap](s.Client)
	w, err := cms.Watch(ctx, client.WatchOptions{Bookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Changes to another kind advance etcd's revision.
	var rv int64
	for i := 0; i < 3; i++ {
		p, err := client.For[*v1.Pod](s.Client).Create(ctx, newPod(fmt.Sprint("p", i), nil))
		if err != nil {
			t.Fatal(err)
		}
		rv = p.Metadata.ResourceVersion
	}
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != "BOOKMARK" {
			t.Fatalf("unexpected %s", ev.Type)
		}
		if ev.ResourceVersion >= rv {
			return
		}
	}
}
