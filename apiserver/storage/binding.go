package storage

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// NodeBindingsPrefix holds one key per node that every bind to the node
// rewrites in the same transaction as the pod: its mod revision is the
// node's last binding, its value the binder that made it.
const NodeBindingsPrefix = Prefix + "nodebindings/"

// Binding qualifies the write of a pod's binding.
type Binding struct {
	Node string
	// Binder names the caller's view of the cluster (a scheduler replica).
	Binder string
	// ObservedRevision, if > 0, is the newest revision the binder's view of
	// pods reflects: the bind fails with a Conflict if a different binder
	// bound a pod to Node after it (the binder cannot have counted that
	// pod's resources). Bindings by the same binder are counted by it
	// already (it assumed them), so they never conflict.
	ObservedRevision int64
}

// UpdateBinding is GuaranteedUpdate for binding a pod to b.Node: fn sets
// the binding on the stored pod, decoded afresh for each attempt (so fn
// may change it in place and no copy is made: binds are the scheduler's
// hot path, and two clones of a pod were 7% of the apiserver's CPU in the
// scheduler benchmark); the pod and the node's bindings
// key are written in one compare-and-swap transaction, so two binders
// racing on one node are serialized by etcd. It fails with a Conflict as
// described on Binding.ObservedRevision, and with fn's error as is.
func (s *Store) UpdateBinding(ctx context.Context, k *kinds.Kind, ns, name string, b Binding, fn func(cur v1.Object) (v1.Object, error)) (v1.Object, error) {
	podKey, nodeKey := Key(k, ns, name), NodeBindingsPrefix+b.Node
	defer s.observe("bind", time.Now())
	for attempt := 0; ; attempt++ {
		read, err := s.cli.Txn(ctx).Then(clientv3.OpGet(podKey), clientv3.OpGet(nodeKey)).Commit()
		if err != nil {
			return nil, unavailable(err)
		}
		kvs := read.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return nil, apierrors.NotFound(k.GroupResource(), name)
		}
		podRev := kvs[0].ModRevision
		cur, err := s.Decode(k, kvs[0].Key, kvs[0].Value, podRev)
		if err != nil {
			return nil, err
		}
		var lastBinder string
		var lastRev int64
		if nk := read.Responses[1].GetResponseRange().Kvs; len(nk) > 0 {
			lastBinder, lastRev = string(nk[0].Value), nk[0].ModRevision
		}
		next, err := fn(cur)
		if err != nil {
			return nil, err
		}
		if b.ObservedRevision > 0 && lastRev > b.ObservedRevision && lastBinder != b.Binder {
			return nil, apierrors.New(apierrors.ErrConflict,
				"node %q has a binding (revision %d, by %q) newer than the binder's view (revision %d): retry once the view includes it",
				b.Node, lastRev, lastBinder, b.ObservedRevision)
		}
		val, err := s.encode(k, podKey, next)
		if err != nil {
			return nil, err
		}
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(podKey), "=", podRev), clientv3.Compare(clientv3.ModRevision(nodeKey), "=", lastRev)).
			Then(clientv3.OpPut(podKey, string(val)), clientv3.OpPut(nodeKey, b.Binder)).
			Commit()
		if err != nil {
			return nil, unavailable(err)
		}
		if !resp.Succeeded {
			if attempt < 100 {
				continue // the pod or another binding to the node moved: read again
			}
			return nil, apierrors.Conflict(k.GroupResource(), name)
		}
		v1.Meta(next).ResourceVersion = resp.Header.Revision
		return next, nil
	}
}

// ForgetNodeBindings drops a deleted node's bindings key.
func (s *Store) ForgetNodeBindings(ctx context.Context, node string) {
	_, _ = s.cli.Delete(ctx, NodeBindingsPrefix+node)
}
