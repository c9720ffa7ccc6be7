// Package leaderelection elects one leader among replicas of a component
// through a Lease object in the API (never etcd directly).
//
// Loop: try to acquire the lease (create it, or take it over when its holder
// has not renewed within LeaseDuration); once held, run the leader's work in
// a context that is cancelled as soon as a renewal fails for RenewDeadline;
// keep renewing every RetryPeriod. Writes are compare-and-swap on the
// lease's resource_version, so two candidates never both win.
package leaderelection

import (
	"context"
	"fmt"
	"log/slog"
	"time"

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
	leases := client.For[*v1.Lease](c)
	log := cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
	// Acquire.
	for {
		ok, err := tryAcquireOrRenew(ctx, leases, cfg)
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
	lastRenew := time.Now()
	t := time.NewTicker(cfg.RetryPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			release(leases, cfg)
			return nil
		case <-done:
			release(leases, cfg)
			return fmt.Errorf("leader work for %s ended", cfg.Name)
		case <-t.C:
		}
		rctx, rcancel := context.WithTimeout(ctx, cfg.RetryPeriod)
		ok, err := tryAcquireOrRenew(rctx, leases, cfg)
		rcancel()
		if ok {
			lastRenew = time.Now()
			continue
		}
		if time.Since(lastRenew) > cfg.RenewDeadline {
			log.Warn("lost leadership", "err", err)
			cancel()
			<-done
			return fmt.Errorf("lost leadership of %s/%s", cfg.Namespace, cfg.Name)
		}
	}
}

func tryAcquireOrRenew(ctx context.Context, leases *client.Typed[*v1.Lease], cfg Config) (bool, error) {
	now := timestamppb.Now()
	cur, err := leases.Get(ctx, cfg.Namespace, cfg.Name)
	if apierrors.IsNotFound(err) {
		_, err := leases.Create(ctx, &v1.Lease{
			Metadata: &v1.ObjectMeta{Name: cfg.Name, Namespace: cfg.Namespace},
			Spec: &v1.LeaseSpec{HolderIdentity: cfg.Identity, LeaseDurationSeconds: int32(cfg.LeaseDuration / time.Second),
				AcquireTime: now, RenewTime: now},
		})
		return err == nil, err
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
		AcquireTime: spec.AcquireTime, RenewTime: now, LeaseTransitions: spec.LeaseTransitions,
	}}
	if spec.HolderIdentity != cfg.Identity {
		next.Spec.AcquireTime = now
		next.Spec.LeaseTransitions++
	}
	_, err = leases.Update(ctx, next) // CAS on cur's resource_version
	return err == nil, err
}

// release gives the lease up on a clean stop so a standby takes over at once.
func release(leases *client.Typed[*v1.Lease], cfg Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cur, err := leases.Get(ctx, cfg.Namespace, cfg.Name)
	if err != nil || cur.GetSpec().GetHolderIdentity() != cfg.Identity {
		return
	}
	cur.Spec.HolderIdentity = ""
	cur.Spec.RenewTime = timestamppb.New(time.Unix(0, 0))
	_, _ = leases.Update(ctx, cur)
}
