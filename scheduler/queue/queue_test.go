package queue

import (
	"context"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) step(d time.Duration) { c.t = c.t.Add(d) }

func info(name string, priority int32) *framework.PodInfo {
	return framework.NewPodInfo(&v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:     &v1.PodSpec{Priority: priority},
	})
}

func newQueue() (*Queue, *clock) {
	clk := &clock{t: time.Unix(1000, 0)}
	return New(Config{InitialBackoff: time.Second, MaxBackoff: 4 * time.Second, UnschedulableTimeout: time.Minute, Now: clk.now}), clk
}

func pop(t *testing.T, q *Queue) *QueuedPod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	qp, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return qp
}

func TestOrder(t *testing.T) {
	q, clk := newQueue()
	for _, p := range []struct {
		name string
		prio int32
	}{{"a", 0}, {"b", 10}, {"c", 0}, {"d", 10}} {
		q.Add(info(p.name, p.prio))
		clk.step(time.Millisecond)
	}
	var got string
	for i := 0; i < 4; i++ {
		got += pop(t, q).Info.Pod.Metadata.Name
	}
	if got != "bdac" {
		t.Errorf("pop order %q, want bdac (priority, then first in)", got)
	}
}

func TestUnschedulableWaitsForAHelpfulEvent(t *testing.T) {
	q, clk := newQueue()
	q.Add(info("a", 0))
	qp := pop(t, q)
	q.AddUnschedulable(qp, framework.NodeAdded|framework.PodRemoved)
	if l := q.Len(); l.Unschedulable != 1 {
		t.Fatalf("lengths %+v", l)
	}
	q.MoveAllToActive(framework.NodeLabelsChanged)
	if l := q.Len(); l.Unschedulable != 1 {
		t.Fatalf("an event that cannot help moved the pod: %+v", l)
	}
	// Within its backoff the pod goes to backoff, then to active.
	q.MoveAllToActive(framework.PodRemoved)
	if l := q.Len(); l.Backoff != 1 {
		t.Fatalf("lengths %+v, want it in backoff", l)
	}
	clk.step(999 * time.Millisecond)
	q.Flush()
	if l := q.Len(); l.Backoff != 1 {
		t.Fatalf("left backoff early: %+v", l)
	}
	clk.step(time.Millisecond)
	q.Flush()
	if l := q.Len(); l.Active != 1 {
		t.Fatalf("lengths %+v, want it active", l)
	}
	// After the backoff an event moves it straight to active.
	qp = pop(t, q)
	q.AddUnschedulable(qp, framework.NodeAdded)
	clk.step(10 * time.Second)
	q.MoveAllToActive(framework.NodeAdded)
	if l := q.Len(); l.Active != 1 {
		t.Fatalf("lengths %+v, want it active", l)
	}
}

func TestMoveDuringAttemptIsNotLost(t *testing.T) {
	q, _ := newQueue()
	q.Add(info("a", 0))
	qp := pop(t, q)
	q.MoveAllToActive(framework.NodeAdded) // a node arrives while we decide
	q.AddUnschedulable(qp, framework.NodeAdded)
	if l := q.Len(); l.Backoff != 1 || l.Unschedulable != 0 {
		t.Errorf("lengths %+v: want the pod in backoff, not waiting for another event", l)
	}
}

func TestUnschedulableTimeout(t *testing.T) {
	q, clk := newQueue()
	q.Add(info("a", 0))
	q.AddUnschedulable(pop(t, q), framework.NodeAdded)
	clk.step(59 * time.Second)
	q.Flush()
	if q.Len().Unschedulable != 1 {
		t.Fatal("flushed before the timeout")
	}
	clk.step(time.Second)
	q.Flush()
	if l := q.Len(); l.Active != 1 {
		t.Errorf("lengths %+v after the timeout, want active", l)
	}
}

func TestBackoffDoubles(t *testing.T) {
	q, clk := newQueue()
	q.Add(info("a", 0))
	for attempt, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		qp := pop(t, q)
		q.AddBackoff(qp)
		clk.step(want - time.Millisecond)
		q.Flush()
		if q.Len().Active != 0 {
			t.Fatalf("attempt %d: active before %v", attempt+1, want)
		}
		clk.step(time.Millisecond)
		q.Flush()
		if q.Len().Active != 1 {
			t.Fatalf("attempt %d: not active after %v", attempt+1, want)
		}
	}
}

func TestDelete(t *testing.T) {
	q, clk := newQueue()
	for _, n := range []string{"a", "b", "c", "d"} {
		q.Add(info(n, 0))
		clk.step(time.Millisecond)
	}
	a, b := pop(t, q), pop(t, q)
	q.AddBackoff(a)
	q.AddUnschedulable(b, framework.NodeAdded)
	q.Delete("ns/a")
	q.Delete("ns/b")
	q.Delete("ns/c")
	q.Delete("ns/nope")
	if l := q.Len(); l != (Lengths{Active: 1}) {
		t.Errorf("lengths %+v, want only d active", l)
	}
	// A pod deleted while in flight does not come back.
	d := pop(t, q)
	q.Delete("ns/d")
	q.AddBackoff(d)
	q.AddUnschedulable(d, framework.NodeAdded)
	if l := q.Len(); l != (Lengths{}) {
		t.Errorf("deleted in-flight pod came back: %+v", l)
	}
}

func TestFailedBindComesBack(t *testing.T) {
	q, clk := newQueue()
	q.Add(info("a", 0))
	qp := pop(t, q)
	q.Done("ns/a")
	q.AddBackoff(qp) // the asynchronous bind failed
	clk.step(time.Second)
	q.Flush()
	if got := pop(t, q); got != qp || got.Attempts != 2 {
		t.Errorf("got %v attempts %d, want the same pod on its second attempt", got.Info.Key, got.Attempts)
	}
}

func TestUpdateRetriesUnschedulable(t *testing.T) {
	q, clk := newQueue()
	q.Add(info("a", 0))
	q.AddUnschedulable(pop(t, q), framework.NodeAdded)
	clk.step(2 * time.Second)
	q.Update(info("a", 0))
	if l := q.Len(); l.Active != 1 {
		t.Errorf("lengths %+v after a spec update, want active", l)
	}
}

func TestPopBlocksUntilCancelled(t *testing.T) {
	q, _ := newQueue()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := q.Pop(ctx)
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if err != context.Canceled {
			t.Errorf("Pop = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pop did not return after cancel")
	}
	q.Close()
	if _, err := q.Pop(context.Background()); err != ErrClosed {
		t.Errorf("Pop on a closed queue = %v", err)
	}
}
