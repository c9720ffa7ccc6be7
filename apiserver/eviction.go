package apiserver

import (
	"context"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// EvictionCheck decides, during an eviction (Objects.Evict), whether a pod
// may be disrupted now. The PodDisruptionBudget check (disruption.go)
// always runs first; Config.EvictionChecks adds others.
//
// CheckEviction runs after the eviction is authorized and before the pod
// is deleted, with the pod as stored, only for a pod that disrupts
// something (running: not pending, succeeded, failed or already being
// deleted), and with the eviction's request (its grace period,
// preconditions, and dry run once the API has it: then it records
// nothing). It returns:
//
//   - nil: the eviction goes on. A check that keeps count records the
//     disruption first, through st with a compare-and-swap, so two
//     concurrent evictions cannot both take the last one a budget allows
//     (Kubernetes decrements status.disruptionsAllowed and adds the pod to
//     status.disruptedPods; if the delete then fails, the budget's
//     controller recounts, as Kubernetes' disruption controller does).
//   - an error wrapping apierrors.ErrTooManyRequests: refused for now; the
//     message names the budget and why ("Cannot evict pod as it would
//     violate the pod's disruption budget."), the caller retries later
//     (tugctl drain and kubectl drain do, every few seconds). Nothing
//     changes.
//   - any other error: the eviction fails with it, and nothing changes.
type EvictionCheck interface {
	CheckEviction(ctx context.Context, st *storage.Store, pod *v1.Pod, req *v1.DeleteRequest) error
}

// Evict implements Objects.Evict: a delete of a pod that first asks the
// eviction checks whether the disruption is allowed.
func (s *Server) Evict(ctx context.Context, req *v1.DeleteRequest) (*anypb.Any, error) {
	podKind, _ := kinds.Lookup("Pod")
	if req.Kind != "" {
		k, err := kinds.Lookup(req.Kind)
		if err != nil {
			return nil, err
		}
		if k != podKind {
			return nil, apierrors.Invalid("kind", "only pods are evicted, not %s", k.Plural)
		}
	}
	if req.Name == "" {
		return nil, apierrors.Invalid("name", "required")
	}
	if err := checkDeleteOptions(req); err != nil {
		return nil, err
	}
	ns := namespaceOf(podKind, req.Namespace)
	if err := s.authorize(ctx, "create", podKind, "eviction", ns, req.Name, ""); err != nil {
		return nil, err
	}
	cur, err := s.store.Get(ctx, podKind, ns, req.Name)
	if err != nil {
		return nil, err
	}
	pod := cur.(*v1.Pod)
	m := pod.GetMetadata()
	if req.ResourceVersion != 0 && req.ResourceVersion != m.GetResourceVersion() {
		return nil, apierrors.Conflict(podKind.GroupResource(), req.Name)
	}
	if disrupts(pod) {
		for _, c := range evictionChecks(s.cfg.EvictionChecks) {
			if err := c.CheckEviction(ctx, s.store, pod, req); err != nil {
				return nil, err
			}
		}
	}
	out, err := s.delete(ctx, podKind, ns, req.Name, req)
	if err != nil {
		return nil, err
	}
	s.log.Info("pod evicted", "pod", ns+"/"+req.Name, "node", pod.GetSpec().GetNodeName())
	return pack(out)
}

// disrupts reports whether evicting pod takes away something running: a
// pod not yet running, finished, or already being deleted does not (and,
// as in Kubernetes, its eviction skips the budgets).
func disrupts(pod *v1.Pod) bool {
	if pod.GetMetadata().GetDeletionTimestamp() != nil {
		return false
	}
	switch pod.GetStatus().GetPhase() {
	case "", "Pending", "Succeeded", "Failed":
		return false
	}
	return true
}
