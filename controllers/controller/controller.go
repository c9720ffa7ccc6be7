// Package controller is the one skeleton every Tugboat controller runs on,
// plus what controllers share: informers (one per kind, shared by all
// controllers), indexes, owner-reference claiming, expectations, pod and
// condition helpers, and metrics.
//
// Loop: informer handlers only enqueue a key ("ns/name"); Run waits for the
// caches to sync, runs Prepare once, then Workers goroutines pop keys and
// call Sync(ctx, key). Sync is level-triggered and idempotent: it re-reads
// the current state from the caches, converges it through the API and
// writes status. A nil error forgets the key's backoff; an error requeues
// the key with per-key exponential backoff; an error wrapped by Permanent
// is logged, counted and dropped (the next change to the object enqueues it
// again).
//
// Contract: a key is never synced by two workers at once; objects from the
// caches are shared and never mutated (informer.Copy first); Sync must not
// block beyond its API calls (use EnqueueAfter to look again later).
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/workqueue"
)

// Config describes one controller loop.
type Config struct {
	// Name names the controller in logs and metrics ("replicaset").
	Name string
	// Workers is how many keys are synced in parallel (default 1).
	Workers int
	// Sync converges one key. Required.
	Sync func(ctx context.Context, key string) error
	// Prepare, if set, runs once after the caches synced and before any
	// worker starts (node IPAM rebuilds its allocation map here). An error
	// stops Run.
	Prepare func(ctx context.Context) error
	// Synced are the caches to wait for before Prepare and the workers.
	Synced []func() bool
	// BaseDelay and MaxDelay bound the per-key retry backoff (defaults 5ms
	// and 1000s, as client-go's controllers use).
	BaseDelay, MaxDelay time.Duration
	// Metrics may be nil.
	Metrics *Metrics
	Logger  *slog.Logger
}

// Controller runs Sync over keys from its queue.
type Controller struct {
	cfg   Config
	queue *workqueue.Queue
	log   *slog.Logger
}

// New makes a controller; add keys with Enqueue, then Run it.
func New(cfg Config) *Controller {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = 5 * time.Millisecond
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 1000 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Controller{cfg: cfg, queue: workqueue.New(cfg.BaseDelay, cfg.MaxDelay), log: cfg.Logger.With("controller", cfg.Name)}
	if cfg.Metrics != nil {
		cfg.Metrics.watchQueue(cfg.Name, c.queue)
	}
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return c.cfg.Name }

// Enqueue queues key for a sync now.
func (c *Controller) Enqueue(key string) { c.queue.Add(key) }

// EnqueueAfter queues key for a sync after d.
func (c *Controller) EnqueueAfter(key string, d time.Duration) { c.queue.AddAfter(key, d) }

// EnqueueObject queues obj's key ("ns/name").
func (c *Controller) EnqueueObject(obj v1.Object) { c.queue.Add(v1.Key(obj)) }

// Len is the number of keys waiting.
func (c *Controller) Len() int { return c.queue.Len() }

// Run waits for the caches, runs Prepare, then syncs keys until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	for _, synced := range c.cfg.Synced {
		if !waitFor(ctx, synced) {
			return nil
		}
	}
	if c.cfg.Prepare != nil {
		if err := c.cfg.Prepare(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s: preparing: %w", c.cfg.Name, err)
		}
	}
	c.log.Info("started", "workers", c.cfg.Workers)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	start := time.Now()
	err := c.sync(ctx, key)
	if m := c.cfg.Metrics; m != nil {
		m.syncDuration.WithLabelValues(c.cfg.Name).Observe(time.Since(start).Seconds())
	}
	switch {
	case err == nil:
		c.queue.Forget(key)
	case ctx.Err() != nil:
		// Shutting down: the next leader starts from a fresh list.
	case IsPermanent(err):
		c.queue.Forget(key)
		c.cfg.Metrics.syncError(c.cfg.Name, "permanent")
		c.log.Error("sync failed permanently; dropping key", "key", key, "err", err)
	default:
		n := c.queue.Failures(key)
		c.cfg.Metrics.syncError(c.cfg.Name, "retry")
		lvl := slog.LevelDebug
		if n >= 3 {
			lvl = slog.LevelWarn
		}
		c.log.Log(ctx, lvl, "sync failed; retrying", "key", key, "attempt", n+1, "err", err)
		c.queue.AddRateLimited(key)
	}
	return true
}

// sync calls the user's Sync, turning a panic into a retried error so one
// bad object does not take the controller-manager down.
func (c *Controller) sync(ctx context.Context, key string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in %s sync of %q: %v", c.cfg.Name, key, r)
		}
	}()
	return c.cfg.Sync(ctx, key)
}

func waitFor(ctx context.Context, synced func() bool) bool {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !synced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// permanent marks an error that retrying cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so the skeleton logs and drops the key instead of
// retrying it (an invalid object, a selector that cannot be parsed).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was wrapped by Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
