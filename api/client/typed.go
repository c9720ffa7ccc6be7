package client

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Typed is the API for one kind. T is the kind's message type, or v1.Object
// for a kind chosen at run time (ForKind).
type Typed[T v1.Object] struct {
	c    *Client
	kind *kinds.Kind
	// dryRun makes every write a server-side dry run (see DryRun).
	dryRun bool
}

// For returns the typed API for T's kind, e.g. client.For[*v1.Pod](c).
func For[T v1.Object](c *Client) *Typed[T] {
	var zero T
	k, err := kinds.ForMessage(zero)
	if err != nil {
		panic(fmt.Sprintf("client.For: %v", err)) // a programming error: T is not a stored kind
	}
	return &Typed[T]{c: c, kind: k}
}

// ForKind returns an untyped API for a kind resolved at run time.
func ForKind(c *Client, k *kinds.Kind) *Typed[v1.Object] {
	return &Typed[v1.Object]{c: c, kind: k}
}

// Kind is the kind this API serves.
func (t *Typed[T]) Kind() *kinds.Kind { return t.kind }

// DryRun is the same API with every write (Create, Update, UpdateStatus,
// Delete, Patch) a server-side dry run: the apiserver validates, defaults
// and admits it as it would the write, and answers with the object as it
// would be stored, but stores nothing (Kubernetes' dryRun=All).
func (t *Typed[T]) DryRun() *Typed[T] {
	c := *t
	c.dryRun = true
	return &c
}

func (t *Typed[T]) decode(a *anypb.Any) (T, error) {
	var zero T
	obj := t.kind.New()
	if err := a.UnmarshalTo(obj); err != nil {
		return zero, fmt.Errorf("decoding %s: %w", t.kind.Name, err)
	}
	return obj.(T), nil
}

// Create stores obj and returns it as stored.
func (t *Typed[T]) Create(ctx context.Context, obj T) (T, error) {
	var zero T
	a, err := anypb.New(obj)
	if err != nil {
		return zero, err
	}
	out, err := t.c.objects.Create(ctx, &v1.CreateRequest{Object: a, DryRun: t.dryRun})
	if err != nil {
		return zero, apierrors.FromGRPC(err)
	}
	return t.decode(out)
}

// Get reads one object.
func (t *Typed[T]) Get(ctx context.Context, ns, name string) (T, error) {
	var zero T
	out, err := t.c.objects.Get(ctx, &v1.GetRequest{Kind: t.kind.Name, Namespace: ns, Name: name})
	if err != nil {
		return zero, apierrors.FromGRPC(err)
	}
	return t.decode(out)
}

// ListOptions selects objects; Namespace "" lists every namespace.
type ListOptions struct {
	Namespace     string
	LabelSelector string
	FieldSelector string
	// Limit pages the list; List fetches every page.
	Limit int64
}

// List returns every matching object and the revision to watch from.
func (t *Typed[T]) List(ctx context.Context, opts ListOptions) ([]T, int64, error) {
	var items []T
	req := &v1.ListRequest{Kind: t.kind.Name, Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector, Limit: opts.Limit}
	for {
		resp, err := t.c.objects.List(ctx, req)
		if err != nil {
			return nil, 0, apierrors.FromGRPC(err)
		}
		for _, a := range resp.Items {
			obj, err := t.decode(a)
			if err != nil {
				return nil, 0, err
			}
			items = append(items, obj)
		}
		if resp.Continue == "" {
			return items, resp.ResourceVersion, nil
		}
		req.Continue = resp.Continue
	}
}

// Update writes metadata and spec; with a non-zero resource_version it fails
// with ErrConflict if the object changed since it was read.
func (t *Typed[T]) Update(ctx context.Context, obj T) (T, error) {
	return t.update(ctx, obj, t.c.objects.Update)
}

// UpdateStatus writes status only.
func (t *Typed[T]) UpdateStatus(ctx context.Context, obj T) (T, error) {
	return t.update(ctx, obj, t.c.objects.UpdateStatus)
}

func (t *Typed[T]) update(ctx context.Context, obj T, call func(context.Context, *v1.UpdateRequest, ...grpcCallOption) (*anypb.Any, error)) (T, error) {
	var zero T
	a, err := anypb.New(obj)
	if err != nil {
		return zero, err
	}
	out, err := call(ctx, &v1.UpdateRequest{Object: a, DryRun: t.dryRun})
	if err != nil {
		return zero, apierrors.FromGRPC(err)
	}
	return t.decode(out)
}

// DeleteOptions qualify a delete.
type DeleteOptions struct {
	// ResourceVersion, if set, is a precondition.
	ResourceVersion int64
	// GracePeriodSeconds overrides a pod's grace period; 0 deletes at once.
	GracePeriodSeconds *int64
	// PropagationPolicy is Background (default), Foreground or Orphan.
	PropagationPolicy string
}

// Delete deletes or starts deleting an object; it returns the object as it
// was last stored (with deletion_timestamp if the delete is graceful).
func (t *Typed[T]) Delete(ctx context.Context, ns, name string, opts DeleteOptions) (T, error) {
	var zero T
	out, err := t.c.objects.Delete(ctx, &v1.DeleteRequest{
		Kind: t.kind.Name, Namespace: ns, Name: name,
		ResourceVersion: opts.ResourceVersion, GracePeriodSeconds: opts.GracePeriodSeconds, PropagationPolicy: opts.PropagationPolicy,
		DryRun: t.dryRun,
	})
	if err != nil {
		return zero, apierrors.FromGRPC(err)
	}
	return t.decode(out)
}

// PatchOptions qualify a patch.
type PatchOptions struct {
	// Subresource "status" patches the status only; "resize" a pod's
	// containers' resources (pods/resize); "" the object.
	Subresource string
	// ResourceVersion, if set, is a precondition.
	ResourceVersion int64
}

// Patch changes an object by a patch document applied on the server
// (Objects.Patch): typ is "strategic", "merge" or "json" (package
// api/patch), data the patch as JSON against the object's
// Kubernetes-shaped JSON. It returns the object as stored (unchanged, with
// the same resource version, when the patch changes nothing).
func (t *Typed[T]) Patch(ctx context.Context, ns, name, typ string, data []byte, opts PatchOptions) (T, error) {
	var zero T
	out, err := t.c.objects.Patch(ctx, &v1.PatchRequest{
		Kind: t.kind.Name, Namespace: ns, Name: name, Type: typ, Patch: data,
		Subresource: opts.Subresource, ResourceVersion: opts.ResourceVersion, DryRun: t.dryRun,
	})
	if err != nil {
		return zero, apierrors.FromGRPC(err)
	}
	return t.decode(out)
}

// Mutate reads an object, applies fn to it and updates it, retrying on
// conflicts: the way to change a field without losing concurrent writes.
func (t *Typed[T]) Mutate(ctx context.Context, ns, name string, status bool, fn func(T) error) (T, error) {
	var zero T
	for attempt := 0; ; attempt++ {
		cur, err := t.Get(ctx, ns, name)
		if err != nil {
			return zero, err
		}
		next := proto.Clone(cur).(T)
		if err := fn(next); err != nil {
			return zero, err
		}
		if proto.Equal(next, cur) {
			return cur, nil
		}
		var out T
		if status {
			out, err = t.UpdateStatus(ctx, next)
		} else {
			out, err = t.Update(ctx, next)
		}
		if apierrors.IsConflict(err) && attempt < 20 {
			continue
		}
		return out, err
	}
}
