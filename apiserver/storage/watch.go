package storage

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tugboat/tugboat/api/kinds"
)

// KindWatch is one etcd watch of all objects of a kind: the watch cache's
// feed (package watchcache keeps one per kind and fans it out). It reports
// changes as stored, undecoded (Decode turns a value into an object), with
// each change's previous value, and answers RequestProgress with a
// progress response once every earlier change has been delivered.
type KindWatch struct {
	w  clientv3.Watcher
	ch clientv3.WatchChan
}

// Change is one write or delete of a key.
type Change struct {
	Key, Value []byte // Value is empty for a delete
	Rev        int64  // the change's revision
	Created    bool   // the key did not exist before
	Deleted    bool
	// PrevValue and PrevRev are the value before the change (empty if the
	// key did not exist or etcd no longer has it).
	PrevValue []byte
	PrevRev   int64
}

// WatchResponse is one batch from a KindWatch: changes, or one of the
// notices below.
type WatchResponse struct {
	Changes []Change
	// Created: the watch is open (sent once, first).
	Created bool
	// Progress: every change up to Revision has been delivered.
	Progress bool
	// Revision is etcd's revision when the response was sent.
	Revision int64
	// CompactRevision: history before it is gone; the watch has ended and
	// must be reopened at this revision.
	CompactRevision int64
	// Err: the watch failed and has ended.
	Err error
}

// WatchKind opens a watch of kind k's keys that delivers every change after
// revision from-1, in order, until ctx ends or the watch fails. It needs an
// etcd leader (a partitioned member ends the watch with an error). Close it
// when done.
func (s *Store) WatchKind(ctx context.Context, k *kinds.Kind, from int64) *KindWatch {
	w := clientv3.NewWatcher(s.cli)
	ch := w.Watch(clientv3.WithRequireLeader(ctx), KindPrefix(k, ""),
		clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithRev(from), clientv3.WithCreatedNotify())
	return &KindWatch{w: w, ch: ch}
}

// errWatchClosed ends a watch whose channel etcd closed.
var errWatchClosed = errors.New("watch channel closed")

// Next blocks for the next response. After a response with Err or
// CompactRevision set the watch has ended.
func (w *KindWatch) Next() WatchResponse {
	resp, ok := <-w.ch
	if !ok {
		return WatchResponse{Err: errWatchClosed}
	}
	out := WatchResponse{Created: resp.Created, Progress: resp.IsProgressNotify(), Revision: resp.Header.Revision,
		CompactRevision: resp.CompactRevision, Err: resp.Err()}
	if len(resp.Events) > 0 {
		out.Changes = make([]Change, len(resp.Events))
	}
	for i, ev := range resp.Events {
		c := Change{Key: ev.Kv.Key, Value: ev.Kv.Value, Rev: ev.Kv.ModRevision, Created: ev.IsCreate(), Deleted: ev.Type == mvccpb.DELETE}
		if ev.PrevKv != nil {
			c.PrevValue, c.PrevRev = ev.PrevKv.Value, ev.PrevKv.ModRevision
		}
		out.Changes[i] = c
	}
	return out
}

// RequestProgress asks for a Progress response. (etcd's client finds the
// watch's stream by the context's metadata, so the request carries the
// same require-leader mark as the watch.)
func (w *KindWatch) RequestProgress(ctx context.Context) error {
	return w.w.RequestProgress(clientv3.WithRequireLeader(ctx))
}

// Close ends the watch.
func (w *KindWatch) Close() error { return w.w.Close() }
