package apiserver

import (
	"context"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Admitter is an admission step for one kind: it may adjust an object
// before it is stored (old is nil on create) or refuse it with an error
// naming the field, and must undo what it reserved when Release is called
// (a create that failed to store, or a delete).
type Admitter interface {
	Admit(ctx context.Context, obj, old v1.Object) error
	Release(ctx context.Context, obj v1.Object)
}

// UpdateHooks is implemented by admitters that reserve things on update:
// they learn whether the update was stored, to free what the old version
// held (committed) or what the new one claimed (aborted).
type UpdateHooks interface {
	UpdateCommitted(ctx context.Context, old, new v1.Object)
	UpdateAborted(ctx context.Context, old, new v1.Object)
}

func (s *Server) updateDone(ctx context.Context, k *kinds.Kind, old, new v1.Object, stored bool) {
	for _, a := range s.admitters(k) {
		if h, ok := a.(UpdateHooks); ok {
			if stored {
				h.UpdateCommitted(ctx, old, new)
			} else {
				h.UpdateAborted(ctx, old, new)
			}
		}
	}
}

// admitters are per-kind admission steps; the services issue registers the
// ClusterIP/NodePort allocator here.
func (s *Server) admitters(k *kinds.Kind) []Admitter { return s.admission[k.Name] }

func (s *Server) admit(ctx context.Context, k *kinds.Kind, obj, old v1.Object) error {
	for _, a := range s.admitters(k) {
		if err := a.Admit(ctx, obj, old); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) release(ctx context.Context, k *kinds.Kind, obj v1.Object) {
	for _, a := range s.admitters(k) {
		a.Release(ctx, obj)
	}
}
