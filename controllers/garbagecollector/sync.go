package garbagecollector

import (
	"context"
	"errors"
	"fmt"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// errSkip aborts a read-modify-write that no longer applies.
var errSkip = errors.New("object changed")

func (c *Controller) sync(ctx context.Context, key string) error {
	kind, objKey, err := parseKey(key)
	if err != nil {
		return controller.Permanent(err)
	}
	k, ok := c.kinds[kind]
	if !ok {
		return controller.Permanent(fmt.Errorf("unknown kind %q", kind))
	}
	o, ok := c.sources[kind].Get(objKey)
	if !ok {
		return nil
	}
	m := o.GetMetadata()
	if m.GetDeletionTimestamp() != nil {
		switch {
		case hasFinalizer(m, FinalizerOrphan):
			return c.orphan(ctx, k, o)
		case hasFinalizer(m, FinalizerForeground):
			return c.foreground(ctx, k, o)
		}
		return nil // being deleted already
	}
	if len(m.GetOwnerReferences()) == 0 {
		return nil
	}
	return c.attemptToDelete(ctx, k, o)
}

type ownerState int

const (
	ownerSolid   ownerState = iota // exists, not going away in the foreground
	ownerGone                      // absent, or replaced by another uid
	ownerWaiting                   // deleting in the foreground: waits for its dependents
)

// ownerState looks an owner up: the cache first, and the apiserver before
// concluding it is gone (the cache may not have seen a fresh owner yet).
func (c *Controller) ownerState(ctx context.Context, ns string, ref *v1.OwnerReference) (ownerState, error) {
	k, ok := c.kinds[ref.Kind]
	if !ok {
		// A kind Tugboat does not store: nothing can be known; keep the dependent.
		c.log.Debug("owner of unknown kind; leaving dependent alone", "kind", ref.Kind, "name", ref.Name)
		return ownerSolid, nil
	}
	if !k.Namespaced {
		ns = ""
	}
	owner, ok := c.sources[k.Name].Get(objectKey(k, ns, ref.Name))
	if !ok || owner.GetMetadata().GetUid() != ref.Uid {
		live, err := client.ForKind(c.client, k).Get(ctx, ns, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
			return ownerGone, nil
		case err != nil:
			return 0, err
		}
		if live.GetMetadata().GetUid() != ref.Uid {
			return ownerGone, nil
		}
		owner = live
	}
	om := owner.GetMetadata()
	if om.GetDeletionTimestamp() != nil && hasFinalizer(om, FinalizerForeground) {
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// attemptToDelete handles a dependent: delete it if its owners are gone,
// or drop references to gone owners if some owner remains.
func (c *Controller) attemptToDelete(ctx context.Context, k *kinds.Kind, o v1.Object) error {
	m := o.GetMetadata()
	var solid, gone, waiting []string
	for _, ref := range m.GetOwnerReferences() {
		st, err := c.ownerState(ctx, m.GetNamespace(), ref)
		if err != nil {
			return err
		}
		switch st {
		case ownerSolid:
			solid = append(solid, ref.Uid)
		case ownerGone:
			gone = append(gone, ref.Uid)
		case ownerWaiting:
			waiting = append(waiting, ref.Uid)
		}
	}
	log := c.log.With("kind", k.Name, "object", v1.Key(o))
	switch {
	case len(gone)+len(waiting) == 0:
		return nil
	case len(solid) > 0:
		drop := map[string]bool{}
		for _, u := range append(gone, waiting...) {
			drop[u] = true
		}
		log.Info("removing references to owners that are going", "owners", len(drop))
		err := c.removeRefs(ctx, k, o, drop)
		if err == nil {
			c.actions.WithLabelValues("release").Inc()
		}
		return err
	}
	policy := "Background"
	if len(waiting) > 0 && len(c.dependents(m.GetUid())) > 0 {
		policy = "Foreground"
	}
	log.Info("deleting object whose owners are gone", "propagation", policy)
	_, err := client.ForKind(c.client, k).Delete(ctx, m.GetNamespace(), m.GetName(),
		client.DeleteOptions{ResourceVersion: m.GetResourceVersion(), PropagationPolicy: policy})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		c.actions.WithLabelValues("delete").Inc()
	}
	return err
}

// removeRefs drops the owner references whose uids are in drop.
func (c *Controller) removeRefs(ctx context.Context, k *kinds.Kind, o v1.Object, drop map[string]bool) error {
	m := o.GetMetadata()
	_, err := client.ForKind(c.client, k).Mutate(ctx, m.GetNamespace(), m.GetName(), false, func(cur v1.Object) error {
		cm := v1.Meta(cur)
		if cm.Uid != m.GetUid() {
			return errSkip
		}
		kept := cm.OwnerReferences[:0:0]
		for _, r := range cm.OwnerReferences {
			if !drop[r.Uid] {
				kept = append(kept, r)
			}
		}
		cm.OwnerReferences = kept
		return nil
	})
	if apierrors.IsNotFound(err) || errors.Is(err, errSkip) {
		return nil
	}
	return err
}

// orphan removes the owner's references from its dependents, then the
// "orphan" finalizer.
func (c *Controller) orphan(ctx context.Context, k *kinds.Kind, owner v1.Object) error {
	uid := owner.GetMetadata().GetUid()
	deps, err := c.liveDependents(ctx, k, owner)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if err := c.removeRefs(ctx, d.kind, d.obj, map[string]bool{uid: true}); err != nil {
			return err
		}
		c.actions.WithLabelValues("orphan").Inc()
	}
	c.log.Info("orphaned dependents", "kind", k.Name, "object", v1.Key(owner), "dependents", len(deps))
	return c.removeFinalizer(ctx, k, owner, FinalizerOrphan)
}

// foreground waits for the owner's dependents to be gone (each deletes
// itself when synced), then removes the "foregroundDeletion" finalizer.
func (c *Controller) foreground(ctx context.Context, k *kinds.Kind, owner v1.Object) error {
	if deps := c.dependents(owner.GetMetadata().GetUid()); len(deps) > 0 {
		for _, d := range deps {
			c.loop.Enqueue(key(d.kind, d.obj))
		}
		c.loop.EnqueueAfter(key(k, owner), retryLater)
		return nil
	}
	// The cache says none are left; make sure before letting the owner go.
	deps, err := c.liveDependents(ctx, k, owner)
	if err != nil {
		return err
	}
	if len(deps) > 0 {
		c.loop.EnqueueAfter(key(k, owner), retryLater)
		return nil
	}
	c.log.Info("dependents gone; finishing foreground deletion", "kind", k.Name, "object", v1.Key(owner))
	return c.removeFinalizer(ctx, k, owner, FinalizerForeground)
}

// liveDependents lists, from the apiserver, the objects that reference the
// owner: in its namespace, or everywhere for a cluster-scoped owner. Used
// before an owner is let go, so a dependent the cache has not seen yet is
// not missed.
func (c *Controller) liveDependents(ctx context.Context, k *kinds.Kind, owner v1.Object) ([]dependent, error) {
	m := owner.GetMetadata()
	var out []dependent
	for _, dk := range c.kinds {
		if !dk.Namespaced && k.Namespaced {
			continue // a cluster-scoped object cannot be owned by a namespaced one
		}
		ns := ""
		if k.Namespaced {
			ns = m.GetNamespace()
		}
		items, _, err := client.ForKind(c.client, dk).List(ctx, client.ListOptions{Namespace: ns, Limit: 500})
		if err != nil {
			return nil, err
		}
		for _, o := range items {
			for _, r := range o.GetMetadata().GetOwnerReferences() {
				if r.Uid == m.GetUid() {
					out = append(out, dependent{kind: dk, obj: o})
					break
				}
			}
		}
	}
	return out, nil
}

func (c *Controller) removeFinalizer(ctx context.Context, k *kinds.Kind, o v1.Object, f string) error {
	m := o.GetMetadata()
	_, err := client.ForKind(c.client, k).Mutate(ctx, m.GetNamespace(), m.GetName(), false, func(cur v1.Object) error {
		cm := v1.Meta(cur)
		if cm.Uid != m.GetUid() {
			return errSkip
		}
		kept := cm.Finalizers[:0:0]
		for _, have := range cm.Finalizers {
			if have != f {
				kept = append(kept, have)
			}
		}
		cm.Finalizers = kept
		return nil
	})
	if apierrors.IsNotFound(err) || errors.Is(err, errSkip) {
		return nil
	}
	if err == nil {
		c.actions.WithLabelValues("finalize").Inc()
	}
	return err
}
