package workqueue

import (
	"testing"
	"time"
)

func TestDedupAndReaddWhileProcessing(t *testing.T) {
	q := New(time.Millisecond, time.Second)
	q.Add("a")
	q.Add("a")
	q.Add("b")
	if q.Len() != 2 {
		t.Fatalf("len %d, want 2", q.Len())
	}
	k, _ := q.Get()
	if k != "a" {
		t.Fatalf("got %q", k)
	}
	q.Add("a") // while processing: not handed out twice
	k2, _ := q.Get()
	if k2 != "b" {
		t.Fatalf("got %q, want b", k2)
	}
	if q.Len() != 0 {
		t.Fatalf("a was queued while processing")
	}
	q.Done("a")
	if q.Len() != 1 {
		t.Fatalf("a not re-queued after Done")
	}
	q.Done("b")
}

func TestRateLimitedBackoffAndForget(t *testing.T) {
	q := New(10*time.Millisecond, time.Second)
	q.AddRateLimited("x")
	q.AddRateLimited("x")
	if q.Failures("x") != 2 {
		t.Fatalf("failures %d", q.Failures("x"))
	}
	done := make(chan string)
	go func() { k, _ := q.Get(); done <- k }()
	select {
	case k := <-done:
		if k != "x" {
			t.Fatal(k)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("delayed key never arrived")
	}
	q.Forget("x")
	if q.Failures("x") != 0 {
		t.Fatal("forget did not reset")
	}
}

func TestShutDownWakesGet(t *testing.T) {
	q := New(0, 0)
	done := make(chan bool)
	go func() { _, sd := q.Get(); done <- sd }()
	q.ShutDown()
	select {
	case sd := <-done:
		if !sd {
			t.Fatal("want shutdown")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Get not woken")
	}
}
