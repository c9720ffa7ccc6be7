package apiserver

import (
	"context"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// nodeBindingsCleaner is the Node admission step that drops a deleted
// node's bindings key (storage.UpdateBinding), so they do not pile up.
type nodeBindingsCleaner struct{ store *storage.Store }

func (nodeBindingsCleaner) Admit(context.Context, v1.Object, v1.Object) error { return nil }

func (c nodeBindingsCleaner) Release(ctx context.Context, obj v1.Object) {
	c.store.ForgetNodeBindings(ctx, obj.GetMetadata().GetName())
}
