package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
)

func lines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

func count(ls []string, s string) int {
	n := 0
	for _, l := range ls {
		if l == s {
			n++
		}
	}
	return n
}

// shProc is a process that records its start in file, then runs until
// SIGTERM, which it records too.
func shProc(name, file string) process {
	return process{
		Name: name,
		Path: "sh",
		Args: []string{"-c", `echo start-` + name + ` >> "$0"; trap 'echo stop-` + name + ` >> "$0"; exit 0' TERM; while :; do sleep 0.05; done`, file},
	}
}

func TestSupervisorOrderRestartAndStop(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events")
	a := shProc("a", file)
	a.Ready = func(ctx context.Context) error {
		for count(lines(file), "start-a") == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	b := shProc("b", file)
	crash := process{Name: "crash", Path: "sh", Args: []string{"-c", `echo crash >> "$0"; exit 3`, file}}
	missing := process{Name: "missing", Path: "tugboat-no-such-program"}

	s := &supervisor{
		log:        slog.New(slog.DiscardHandler),
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond,
		StopTimeout: 5 * time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, []process{a, b, crash, missing}) }()

	wait.Eventually(t, 10*time.Second, "b started and crash restarted 3 times", func() error {
		if ls := lines(file); count(ls, "start-b") != 1 || count(ls, "crash") < 3 {
			return fmt.Errorf("the processes wrote %q", ls)
		}
		return nil
	})
	ls := lines(file)
	if ls[0] != "start-a" {
		t.Errorf("first event %q, want start-a (b waits for a's readiness)", ls[0])
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	ls = lines(file)
	ia, ib := -1, -1
	for i, l := range ls {
		switch l {
		case "stop-a":
			ia = i
		case "stop-b":
			ib = i
		}
	}
	if ia < 0 || ib < 0 || ib > ia {
		t.Errorf("events %q: want stop-b before stop-a (reverse start order)", ls)
	}
	if count(ls, "start-a") != 1 {
		t.Errorf("a started %d times, want 1 (it never exited)", count(ls, "start-a"))
	}
}

func TestSupervisorFirstProgramMissing(t *testing.T) {
	s := &supervisor{log: slog.New(slog.DiscardHandler)}
	err := s.Run(context.Background(), []process{{Name: "containerd", Path: "tugboat-no-such-program"}})
	if err == nil || !strings.Contains(err.Error(), "containerd") {
		t.Errorf("err = %v, want the missing first program named", err)
	}
}

func TestSupervisorKillsAfterStopTimeout(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events")
	stubborn := process{Name: "stubborn", Path: "sh", Args: []string{"-c", `trap '' TERM; echo up >> "$0"; while :; do sleep 0.05; done`, file}}
	s := &supervisor{log: slog.New(slog.DiscardHandler), StopTimeout: 300 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, []process{stubborn}) }()
	wait.Eventually(t, 5*time.Second, "stubborn started", func() error {
		if ls := lines(file); count(ls, "up") != 1 {
			return fmt.Errorf("stubborn wrote %q", ls)
		}
		return nil
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a process ignoring SIGTERM was not killed after StopTimeout")
	}
}
