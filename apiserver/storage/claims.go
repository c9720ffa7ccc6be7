package storage

import (
	"context"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Claims hand out unique items of a range (a Service's ClusterIP, a node
// port) across every apiserver sharing the etcd: one key per claimed item,
// /registry/ranges/<range>/<item>, holding its owner ("ns/name"). A claim
// is one etcd transaction, so two apiservers never both hold an item.

// The ranges.
const (
	RangeServiceIPs = "serviceips"
	RangeNodePorts  = "nodeports"
)

func claimPrefix(rng string) string { return Prefix + "ranges/" + rng + "/" }

// Claim takes item of range rng for owner, if it is free. It reports
// whether owner holds the item now, and whether this call took it (false
// when owner held it already, so a failed caller knows what to release).
// An etcd failure is an apierrors.ErrUnavailable.
func (s *Store) Claim(ctx context.Context, rng, item, owner string) (held, taken bool, err error) {
	key := claimPrefix(rng) + item
	defer s.observe("claim", time.Now())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, owner)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return false, false, unavailable(err)
	}
	if resp.Succeeded {
		return true, true, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	return len(kvs) == 1 && string(kvs[0].Value) == owner, false, nil
}

// Release frees item of range rng if owner holds it; otherwise it does
// nothing. Best effort: a claim left by a failed release is freed by the
// owner's repair (see Claims).
func (s *Store) Release(ctx context.Context, rng, item, owner string) error {
	key := claimPrefix(rng) + item
	defer s.observe("release", time.Now())
	_, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", owner)).
		Then(clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Claims returns the claimed items of range rng and their owners as they
// were at revision rev (that of a List of the owners, so the two agree).
func (s *Store) Claims(ctx context.Context, rng string, rev int64) (map[string]string, error) {
	prefix := claimPrefix(rng)
	defer s.observe("claims", time.Now())
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		return nil, unavailable(err)
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = string(kv.Value)
	}
	return out, nil
}
