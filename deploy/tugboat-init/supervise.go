package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// process is one supervised program.
type process struct {
	Name string
	// Path is the program, looked up on PATH.
	Path string
	Args []string
	// Ready, if set, is waited for after the first start before the next
	// process starts (containerd's socket before the kubelet).
	Ready func(ctx context.Context) error
}

// supervisor runs processes in order and keeps them running: one that
// exits is restarted after a back-off that doubles from MinBackoff to
// MaxBackoff and resets once it has run for StableAfter. When the context
// ends they are stopped in reverse order (the kubelet before containerd),
// each with SIGTERM, then SIGKILL after StopTimeout.
//
// Output goes straight to the container's stdout/stderr (files, not
// pipes: containerd's shims inherit them and outlive a containerd
// restart).
type supervisor struct {
	log         *slog.Logger
	MinBackoff  time.Duration
	MaxBackoff  time.Duration
	StableAfter time.Duration
	StopTimeout time.Duration
	// Stdout and Stderr of the children (os.Stdout, os.Stderr if nil).
	Stdout, Stderr *os.File
}

func (s *supervisor) setDefaults() {
	if s.MinBackoff == 0 {
		s.MinBackoff = time.Second
	}
	if s.MaxBackoff == 0 {
		s.MaxBackoff = 30 * time.Second
	}
	if s.StableAfter == 0 {
		s.StableAfter = 30 * time.Second
	}
	if s.StopTimeout == 0 {
		s.StopTimeout = 10 * time.Second
	}
	if s.Stdout == nil {
		s.Stdout = os.Stdout
	}
	if s.Stderr == nil {
		s.Stderr = os.Stderr
	}
}

// Run supervises procs until ctx ends, then stops them; it returns nil
// after a clean stop. A program missing from PATH is an error for the
// first process (the runtime everything else needs) and a logged skip for
// the others, so a node image built before a component existed still
// runs the rest.
func (s *supervisor) Run(ctx context.Context, procs []process) error {
	s.setDefaults()
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	for i, p := range procs {
		path, err := exec.LookPath(p.Path)
		if err != nil {
			if i == 0 {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
			s.log.Error("program not in this image; not started", "process", p.Name, "err", err)
			continue
		}
		p.Path = path
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		started := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.keepRunning(pctx, p, started)
		}()
		stops = append(stops, func() {
			s.log.Info("stopping", "process", p.Name)
			cancel()
			wg.Wait()
		})
		select {
		case <-started:
		case <-ctx.Done():
			return nil
		}
		if p.Ready != nil {
			if err := p.Ready(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%s not ready: %w", p.Name, err)
			}
			s.log.Info("ready", "process", p.Name)
		}
	}
	<-ctx.Done()
	return nil
}

// keepRunning runs p until ctx ends, restarting it with back-off. started
// is closed once the first start returned (successfully or not).
func (s *supervisor) keepRunning(ctx context.Context, p process, started chan struct{}) {
	backoff := s.MinBackoff
	once := sync.OnceFunc(func() { close(started) })
	defer once()
	for {
		begin := time.Now()
		err := s.runOnce(ctx, p, once)
		if ctx.Err() != nil {
			return
		}
		if time.Since(begin) >= s.StableAfter {
			backoff = s.MinBackoff
		}
		s.log.Error("exited; restarting", "process", p.Name, "err", err, "after", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, s.MaxBackoff)
	}
}

// runOnce starts p and waits for it; ctx's end sends SIGTERM, then
// SIGKILL after StopTimeout.
func (s *supervisor) runOnce(ctx context.Context, p process, started func()) error {
	cmd := exec.CommandContext(ctx, p.Path, p.Args...)
	cmd.Stdout, cmd.Stderr = s.Stdout, s.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = s.StopTimeout
	err := cmd.Start()
	started()
	if err != nil {
		return err
	}
	s.log.Info("started", "process", p.Name, "pid", cmd.Process.Pid)
	err = cmd.Wait()
	if err == nil {
		return fmt.Errorf("exited with status 0")
	}
	return err
}
