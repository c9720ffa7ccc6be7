package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Claimer decides which objects an owner controls, adopting matching
// orphans and releasing owned objects whose labels stopped matching
// (Kubernetes' ControllerRefManager). Adoption and release are
// read-modify-write updates of the object's ownerReferences that re-check
// the decision on the fresh object, so a racing change is never overwritten.
type Claimer[T v1.Object] struct {
	API *client.Typed[T]
	// Owner is the controlling object (from the cache: not mutated).
	Owner      v1.Object
	APIVersion string // the owner's, e.g. "apps/v1"
	Kind       string // the owner's, e.g. "ReplicaSet"
	Selector   labels.Selector
	// CanAdopt re-reads the owner before the first adoption and fails if it
	// is being deleted or was replaced, so a stale cache never adopts into
	// an owner that is going away. Nil allows adoption.
	CanAdopt func(ctx context.Context) error

	once     sync.Once
	adoptErr error
}

// errSkip aborts a read-modify-write whose decision no longer holds.
var errSkip = errors.New("claim decision no longer holds")

// Claim returns the candidates the owner controls after adopting and
// releasing. Objects that vanished are skipped; other API errors are
// returned together after trying every candidate.
func (c *Claimer[T]) Claim(ctx context.Context, candidates []T) ([]T, error) {
	om := c.Owner.GetMetadata()
	deleting := om.GetDeletionTimestamp() != nil
	var claimed []T
	var errs []error
	for _, o := range candidates {
		m := o.GetMetadata()
		matches := c.Selector.Matches(m.GetLabels())
		ref := ControllerRef(m)
		switch {
		case ref != nil && ref.Uid != om.GetUid():
			// Someone else's.
		case ref != nil && matches:
			claimed = append(claimed, o)
		case ref != nil:
			// Ours, but the labels no longer match: let it go (unless we are
			// going away: the garbage collector handles our dependents).
			if deleting {
				continue
			}
			if err := c.release(ctx, o); err != nil && !apierrors.IsNotFound(err) && !errors.Is(err, errSkip) {
				errs = append(errs, err)
			}
		case !matches || deleting || m.GetDeletionTimestamp() != nil:
			// An orphan we do not want, or cannot have.
		default:
			adopted, err := c.adopt(ctx, o)
			switch {
			case err == nil:
				claimed = append(claimed, adopted)
			case apierrors.IsNotFound(err) || errors.Is(err, errSkip):
			default:
				errs = append(errs, err)
			}
		}
	}
	return claimed, errors.Join(errs...)
}

func (c *Claimer[T]) adopt(ctx context.Context, o T) (T, error) {
	var zero T
	c.once.Do(func() {
		if c.CanAdopt != nil {
			c.adoptErr = c.CanAdopt(ctx)
		}
	})
	if c.adoptErr != nil {
		return zero, c.adoptErr
	}
	m := o.GetMetadata()
	owner := c.Owner.GetMetadata()
	return c.API.Mutate(ctx, m.GetNamespace(), m.GetName(), false, func(cur T) error {
		cm := v1.Meta(cur)
		if cm.Uid != m.GetUid() || cm.DeletionTimestamp != nil || !c.Selector.Matches(cm.Labels) {
			return errSkip
		}
		if ref := ControllerRef(cm); ref != nil {
			if ref.Uid == owner.GetUid() {
				return nil // already ours
			}
			return errSkip
		}
		cm.OwnerReferences = append(removeRef(cm.OwnerReferences, owner.GetUid()), NewControllerRef(c.Owner, c.APIVersion, c.Kind))
		return nil
	})
}

func (c *Claimer[T]) release(ctx context.Context, o T) error {
	m := o.GetMetadata()
	uid := c.Owner.GetMetadata().GetUid()
	_, err := c.API.Mutate(ctx, m.GetNamespace(), m.GetName(), false, func(cur T) error {
		cm := v1.Meta(cur)
		if cm.Uid != m.GetUid() || c.Selector.Matches(cm.Labels) {
			return errSkip
		}
		cm.OwnerReferences = removeRef(cm.OwnerReferences, uid)
		return nil
	})
	return err
}

func removeRef(refs []*v1.OwnerReference, uid string) []*v1.OwnerReference {
	out := refs[:0:0]
	for _, r := range refs {
		if r.Uid != uid {
			out = append(out, r)
		}
	}
	return out
}

// RecheckOwner returns a CanAdopt function that re-reads the owner through
// get and refuses adoption if it is gone, replaced (uid) or being deleted.
func RecheckOwner[T v1.Object](api *client.Typed[T], owner v1.Object) func(context.Context) error {
	m := owner.GetMetadata()
	return func(ctx context.Context) error {
		fresh, err := api.Get(ctx, m.GetNamespace(), m.GetName())
		if err != nil {
			return err
		}
		fm := fresh.GetMetadata()
		if fm.GetUid() != m.GetUid() {
			return fmt.Errorf("%s/%s was replaced (uid %s, expected %s): %w", m.GetNamespace(), m.GetName(), fm.GetUid(), m.GetUid(), errSkip)
		}
		if fm.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s/%s is being deleted: %w", m.GetNamespace(), m.GetName(), errSkip)
		}
		return nil
	}
}

// Owners finds the owners of dependent objects in the owners' cache: the
// Deployment of a ReplicaSet, the ReplicaSet of a pod. A controller's event
// handlers use it to wake the owner a dependent's change concerns.
type Owners[T v1.Object] struct {
	Source Source[T]
	Kind   string // the owners' kind, as controller references name it
	// Selector returns an owner's selector, for Matching.
	Selector func(T) *v1.LabelSelector
}

// Of returns the owner a controller reference of an object in namespace ns
// points at, if the cache holds it with the same uid; the zero T (nil)
// otherwise.
func (o Owners[T]) Of(ns string, ref *v1.OwnerReference) T {
	var zero T
	if ref == nil || ref.Kind != o.Kind {
		return zero
	}
	owner, ok := o.Source.Get(ns + "/" + ref.Name)
	if !ok || owner.GetMetadata().GetUid() != ref.Uid {
		return zero
	}
	return owner
}

// Matching returns the owners in an orphan's namespace whose selector
// matches its labels: those that may adopt it. It reads the IndexNamespace
// index (register it on Source); an invalid or empty selector matches
// nothing.
func (o Owners[T]) Matching(orphan *v1.ObjectMeta) []T {
	var out []T
	for _, owner := range o.Source.ByIndex(IndexNamespace, orphan.GetNamespace()) {
		sel, err := labels.FromLabelSelector(o.Selector(owner))
		if err == nil && !sel.Empty() && sel.Matches(orphan.GetLabels()) {
			out = append(out, owner)
		}
	}
	return out
}
