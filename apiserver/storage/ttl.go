package storage

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TTLs makes objects of some kinds expire: each write attaches an etcd
// lease, so etcd deletes the key once the TTL has passed since the last
// write (Events, whose default TTL is an hour, so etcd does not fill up).
// Leases are shared by the writes of one minute, as kube-apiserver does, so
// there is one lease per minute, not one per event.
type TTLs struct {
	cli   *clientv3.Client
	ttl   map[string]time.Duration // plural -> TTL
	mu    sync.Mutex
	lease clientv3.LeaseID
	until time.Time
}

// NewTTLs makes a TTL policy; ttl maps plural kind names to TTLs.
func NewTTLs(cli *clientv3.Client, ttl map[string]time.Duration) *TTLs {
	return &TTLs{cli: cli, ttl: ttl}
}

// maxLeaseReuse is the longest a lease is shared (shorter for short TTLs).
const maxLeaseReuse = time.Minute

// opts returns the put option for a write of kind plural, if it expires.
func (t *TTLs) opts(ctx context.Context, plural string) ([]clientv3.OpOption, error) {
	if t == nil {
		return nil, nil
	}
	ttl, ok := t.ttl[plural]
	if !ok {
		return nil, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	reuse := min(maxLeaseReuse, ttl)
	if t.lease == 0 || now.After(t.until) {
		// The lease lives ttl + the reuse window, so an object written at
		// the end of the window still lives at least ttl.
		resp, err := t.cli.Grant(ctx, int64((ttl+reuse+time.Second-1)/time.Second))
		if err != nil {
			return nil, unavailable(err)
		}
		t.lease, t.until = resp.ID, now.Add(reuse)
	}
	return []clientv3.OpOption{clientv3.WithLease(t.lease)}, nil
}
