package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// sync converges one ReplicaSet.
func (c *Controller) sync(ctx context.Context, key string) error {
	rs, ok := c.rss.Get(key)
	if !ok {
		c.exp.Delete(key)
		return nil
	}
	log := c.log.With("replicaset", key)
	sel, err := labels.FromLabelSelector(rs.GetSpec().GetSelector())
	if err != nil {
		return controller.Permanent(fmt.Errorf("replicaset %s: spec.selector: %w", key, err))
	}
	if sel.Empty() {
		return controller.Permanent(fmt.Errorf("replicaset %s: spec.selector selects nothing", key))
	}
	// Read expectations before the cache, so anything observed after this
	// point is in the pods we list.
	satisfied := c.exp.Satisfied(key)

	ns := rs.GetMetadata().GetNamespace()
	candidates := c.pods.ByIndex(controller.IndexControllerUID, rs.GetMetadata().GetUid())
	candidates = append(candidates, c.pods.ByIndex(controller.IndexOrphanNamespace, ns)...)
	active := candidates[:0]
	for _, p := range candidates {
		if controller.IsPodActive(p) {
			active = append(active, p)
		}
	}
	claimer := &controller.Claimer[*v1.Pod]{
		API: c.podAPI, Owner: rs, APIVersion: "apps/v1", Kind: "ReplicaSet", Selector: sel,
		CanAdopt: controller.RecheckOwner(c.rsAPI, rs),
	}
	pods, err := claimer.Claim(ctx, active)
	if err != nil {
		return err
	}
	var manageErr error
	if satisfied && rs.GetMetadata().GetDeletionTimestamp() == nil {
		manageErr = c.manage(ctx, log, rs, pods)
	}
	if err := c.writeStatus(ctx, rs, pods, manageErr); err != nil {
		return errors.Join(manageErr, err)
	}
	return manageErr
}

// manage creates or deletes pods so that len(pods) becomes spec.replicas.
func (c *Controller) manage(ctx context.Context, log logger, rs *v1.ReplicaSet, pods []*v1.Pod) error {
	key := v1.Key(rs)
	want := int(rs.GetSpec().GetReplicas())
	diff := len(pods) - want
	switch {
	case diff < 0:
		n := min(-diff, c.cfg.BurstReplicas)
		log.Debug("creating pods", "have", len(pods), "want", want, "creating", n)
		c.exp.ExpectCreations(key, n)
		created, err := controller.SlowStart(n, 1, func() error { return c.createPod(ctx, rs) })
		// Creates that were skipped or failed will never be observed.
		for range n - created {
			c.exp.CreationObserved(key)
		}
		return err
	case diff > 0:
		n := min(diff, c.cfg.BurstReplicas)
		victims := podsToDelete(pods, n)
		uids := make([]string, len(victims))
		for i, p := range victims {
			uids[i] = p.GetMetadata().GetUid()
		}
		log.Debug("deleting pods", "have", len(pods), "want", want, "deleting", n)
		c.exp.ExpectDeletions(key, uids)
		return c.deletePods(ctx, rs, victims)
	}
	return nil
}

// logger is the part of *slog.Logger manage uses.
type logger interface {
	Debug(msg string, args ...any)
}

// maxGenerateNamePrefix keeps generated pod names within a DNS label.
const maxGenerateNamePrefix = 58

func (c *Controller) createPod(ctx context.Context, rs *v1.ReplicaSet) error {
	t := rs.GetSpec().GetTemplate()
	m := rs.GetMetadata()
	prefix := m.GetName() + "-"
	if len(prefix) > maxGenerateNamePrefix {
		prefix = prefix[:maxGenerateNamePrefix]
	}
	pod := &v1.Pod{
		Metadata: &v1.ObjectMeta{
			GenerateName:    prefix,
			Namespace:       m.GetNamespace(),
			Labels:          cloneMap(t.GetMetadata().GetLabels()),
			Annotations:     cloneMap(t.GetMetadata().GetAnnotations()),
			OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(rs, "apps/v1", "ReplicaSet")},
		},
		Spec: proto.Clone(t.GetSpec()).(*v1.PodSpec),
	}
	out, err := c.podAPI.Create(ctx, pod)
	if err != nil {
		if errors.Is(err, apierrors.ErrForbidden) && c.namespaceTerminating(ctx, m.GetNamespace()) {
			return nil // the namespace is going away, and this ReplicaSet with it
		}
		c.events.Eventf(rs, controller.Warning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.events.Eventf(rs, controller.Normal, "SuccessfulCreate", "Created pod: %s", out.GetMetadata().GetName())
	return nil
}

func (c *Controller) deletePods(ctx context.Context, rs *v1.ReplicaSet, victims []*v1.Pod) error {
	key := v1.Key(rs)
	errs := make(chan error, len(victims))
	var wg sync.WaitGroup
	for _, p := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := p.GetMetadata()
			_, err := c.podAPI.Delete(ctx, m.GetNamespace(), m.GetName(), client.DeleteOptions{})
			if err != nil {
				// The informer will not show this deletion.
				c.exp.DeletionObserved(key, m.GetUid())
				if !apierrors.IsNotFound(err) {
					c.events.Eventf(rs, controller.Warning, "FailedDelete", "Error deleting pod %s: %v", m.GetName(), err)
					errs <- err
				}
				return
			}
			c.events.Eventf(rs, controller.Normal, "SuccessfulDelete", "Deleted pod: %s", m.GetName())
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *Controller) namespaceTerminating(ctx context.Context, ns string) bool {
	n, err := c.nsAPI.Get(ctx, "", ns)
	return err == nil && n.GetMetadata().GetDeletionTimestamp() != nil
}
