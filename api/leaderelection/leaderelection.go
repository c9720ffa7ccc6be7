// Package leaderelection elects one leader among replicas of a component
// through a Lease object in the API (never etcd directly).
//
// Loop: try to acquire the lease (create it, or take it over when its holder
// has not renewed within LeaseDuration); once held, run the leader's work in
// a context that is cancelled as soon as no renewal has succeeded for
// RenewDeadline; try to renew every RetryPeriod. Writes are compare-and-swap
// on the lease's resource_version, so two candidates never both win.
//
// Renewals follow client-go's leader election, so that they survive an
// overloaded apiserver as Kubernetes' components do:
//   - The leader renews optimistically: one Update of the lease it last
//     wrote (CAS on that version), with no Get first. Only when that
//     Update fails does it read the lease again (the slow path, which is
//     also how a candidate acquires).
//   - One attempt may take until the renew deadline (the last renewal plus
//     RenewDeadline), not just RetryPeriod: a renewal that the apiserver
//     answers in 3 s keeps the lease, where a 2 s cap per attempt would
//     fail every attempt and lose it.
//
// A renewal is dated when its attempt starts, and the deadline counts from
// that date, so the leader stops leading before the lease it last wrote can
// expire for the others (RenewDeadline < LeaseDuration).
package leaderelection

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Config names the lock and the timings.
type Config struct {
	Namespace string // default kube-system
	Name      string // the lease name, e.g. "scheduler"
	Identity  string // this candidate, e.g. hostname_pid
	// LeaseDuration is how long a lease is valid after a renewal (default 15s).
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leadership (default 10s).
	RenewDeadline time.Duration
	// RetryPeriod is the interval between attempts (default 2s).
	RetryPeriod time.Duration
	Logger      *slog.Logger
}

func (c *Config) defaults() error {
	if c.Name == "" || c.Identity == "" {
		return fmt.Errorf("leaderelection: Name and Identity are required")
	}
	if c.Namespace == "" {
		c.Namespace = "kube-system"
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.RenewDeadline >= c.LeaseDuration {
		return fmt.Errorf("leaderelection: RenewDeadline must be shorter than LeaseDuration")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Run campaigns until ctx ends; while leading it runs lead(ctx). If lead
// returns, or leadership is lost, Run returns (the caller exits and is
// restarted, as Kubernetes components do) — with nil if ctx ended.
func Run(ctx context.Context, c *client.Client, cfg Config, lead func(ctx context.Context)) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	e := &elector{leases: client.For[*v1.Lease](c), cfg: cfg}
	log := cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
	// Acquire.
	for {
		ok, err := e.tryAcquireOrRenew(ctx, time.Now())
		if err != nil && ctx.Err() == nil {
			log.Debug("acquire failed", "err", err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.RetryPeriod):
		}
	}
	log.Info("became leader")
	leadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); lead(leadCtx) }()
	// Renew.
	lastRenew := e.renewed
	t := time.NewTicker(cfg.RetryPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			e.release()
			return nil
		case <-done:
			e.release()
			return fmt.Errorf("leader work for %s ended", cfg.Name)
		case <-t.C:
		}
		deadline := lastRenew.Add(cfg.RenewDeadline)
		rctx, rcancel := context.WithDeadline(ctx, deadline)
		start := time.Now()
		ok, err := e.tryAcquireOrRenew(rctx, start)
		rcancel()
		if ok {
			lastRenew = e.renewed
			continue
		}
		if ctx.Err() != nil {
			continue // the ctx.Done case above stops cleanly
		}
		log.Debug("renewal failed", "err", err, "took", time.Since(start).Round(time.Millisecond))
		if !time.Now().Before(deadline) {
			log.Warn("lost leadership", "err", err, "lastRenewal", lastRenew.Format(time.RFC3339Nano))
			cancel()
			<-done
			return fmt.Errorf("lost leadership of %s/%s: no renewal within %s: %w", cfg.Namespace, cfg.Name, cfg.RenewDeadline, err)
		}
	}
}

// elector is one candidate's view of the lease.
type elector struct {
	leases *client.Typed[*v1.Lease]
	cfg    Config
	// observed is the lease as this candidate last wrote it while holding
	// it (nil when it does not hold it, or its last write failed): the
	// base of the optimistic renewal.
	observed *v1.Lease
	// renewed is the start of the attempt that last wrote the lease: the
	// renewTime it wrote.
	renewed time.Time
}

// tryAcquireOrRenew makes one attempt, dated now, to take or keep the
// lease. false with a nil error means another candidate holds it.
func (e *elector) tryAcquireOrRenew(ctx context.Context, now time.Time) (bool, error) {
	cfg := e.cfg
	ts := timestamppb.New(now)
	// The fast path: the leader updates the lease it last wrote.
	if o := e.observed; o != nil {
		next := proto.Clone(o).(*v1.Lease)
		next.Spec.RenewTime = ts
		out, err := e.leases.Update(ctx, next) // CAS on o's resource_version
		if err == nil {
			e.observed, e.renewed = out, now
			return true, nil
		}
		e.observed = nil
		if ctx.Err() != nil {
			return false, err
		}
		// A conflict, or an answer lost on the way: read the lease.
	}
	cur, err := e.leases.Get(ctx, cfg.Namespace, cfg.Name)
	if apierrors.IsNotFound(err) {
		out, err := e.leases.Create(ctx, &v1.Lease{
			Metadata: &v1.ObjectMeta{Name: cfg.Name, Namespace: cfg.Namespace},
			Spec: &v1.LeaseSpec{HolderIdentity: cfg.Identity, LeaseDurationSeconds: int32(cfg.LeaseDuration / time.Second),
				AcquireTime: ts, RenewTime: ts},
		})
		if err != nil {
			return false, err
		}
		e.observed, e.renewed = out, now
		return true, nil
	}
	if err != nil {
		return false, err
	}
	spec := cur.Spec
	if spec == nil {
		spec = &v1.LeaseSpec{}
	}
	held := spec.HolderIdentity != "" && spec.HolderIdentity != cfg.Identity
	expires := spec.GetRenewTime().AsTime().Add(time.Duration(spec.LeaseDurationSeconds) * time.Second)
	if held && time.Now().Before(expires) {
		return false, nil
	}
	next := &v1.Lease{Metadata: cur.Metadata, Spec: &v1.LeaseSpec{
		HolderIdentity: cfg.Identity, LeaseDurationSeconds: int32(cfg.LeaseDuration / time.Second),
		AcquireTime: spec.AcquireTime, RenewTime: ts, LeaseTransitions: spec.LeaseTransitions,
	}}
	if spec.HolderIdentity != cfg.Identity {
		next.Spec.AcquireTime = ts
		next.Spec.LeaseTransitions++
	}
	out, err := e.leases.Update(ctx, next) // CAS on cur's resource_version
	if err != nil {
		return false, err
	}
	e.observed, e.renewed = out, now
	return true, nil
}

// release gives the lease up on a clean stop so a standby takes over at once.
func (e *elector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cur, err := e.leases.Get(ctx, e.cfg.Namespace, e.cfg.Name)
	if err != nil || cur.GetSpec().GetHolderIdentity() != e.cfg.Identity {
		return
	}
	cur.Spec.HolderIdentity = ""
	cur.Spec.RenewTime = timestamppb.New(time.Unix(0, 0))
	_, _ = e.leases.Update(ctx, cur)
}
