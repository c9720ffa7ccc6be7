package client

import (
	"context"

	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

type grpcCallOption = grpc.CallOption

// Event is one change seen by a watch.
type Event[T v1.Object] struct {
	Type            string // ADDED, MODIFIED, DELETED or BOOKMARK
	Object          T      // zero for BOOKMARK
	ResourceVersion int64
}

// WatchOptions select what to watch.
type WatchOptions struct {
	Namespace     string
	LabelSelector string
	FieldSelector string
	// ResourceVersion: deliver changes after it; 0 starts now.
	ResourceVersion int64
	// Bookmarks asks for BOOKMARK events carrying the current version.
	Bookmarks bool
}

// Watcher is an open watch stream.
type Watcher[T v1.Object] struct {
	t      *Typed[T]
	stream v1.Objects_WatchClient
	cancel context.CancelFunc
}

// Watch opens a watch. Errors from Next wrap apierrors sentinels; ErrExpired
// means the version is too old: re-list.
func (t *Typed[T]) Watch(ctx context.Context, opts WatchOptions) (*Watcher[T], error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := t.c.objects.Watch(ctx, &v1.WatchRequest{
		Kind: t.kind.Name, Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector,
		ResourceVersion: opts.ResourceVersion, AllowBookmarks: opts.Bookmarks,
	})
	if err != nil {
		cancel()
		return nil, apierrors.FromGRPC(err)
	}
	return &Watcher[T]{t: t, stream: stream, cancel: cancel}, nil
}

// Next blocks for the next event.
func (w *Watcher[T]) Next() (Event[T], error) {
	ev, err := w.stream.Recv()
	if err != nil {
		return Event[T]{}, apierrors.FromGRPC(err)
	}
	out := Event[T]{Type: ev.Type, ResourceVersion: ev.ResourceVersion}
	if ev.Object != nil {
		obj, err := w.t.decode(ev.Object)
		if err != nil {
			return Event[T]{}, err
		}
		out.Object = obj
	}
	return out, nil
}

// Stop closes the stream.
func (w *Watcher[T]) Stop() { w.cancel() }
