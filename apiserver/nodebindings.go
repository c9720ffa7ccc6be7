package apiserver

import (
	"context"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// nodeBindingsCleaner is the Node admission step that drops a deleted
// node's bindings key (storage.UpdateBinding), so they do not pile up.
type nodeBindingsCleaner struct{ store *storage.Store }

func (nodeBindingsCleaner) Admit(context.Context, v1.Object, v1.Object) error { return nil }

// Release runs after a delete and after a failed create; only a node that
// is really gone loses its key (a kubelet re-registering gets AlreadyExists).
func (c nodeBindingsCleaner) Release(ctx context.Context, obj v1.Object) {
	nodeKind, _ := kinds.Lookup("Node")
	if _, err := c.store.Get(ctx, nodeKind, "", obj.GetMetadata().GetName()); apierrors.IsNotFound(err) {
		c.store.ForgetNodeBindings(ctx, obj.GetMetadata().GetName())
	}
}
