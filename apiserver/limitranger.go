package apiserver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// LimitRangerAnnotation says which requests and limits the LimitRanger
// set on a pod (Kubernetes' kubernetes.io/limit-ranger).
const LimitRangerAnnotation = "kubernetes.io/limit-ranger"

// limitRanger is Kubernetes' LimitRanger admission: the namespace's
// LimitRanges give a new pod's containers the default requests and limits
// they do not set (type Container: defaultRequest, default), then bound
// each container (type Container) and the pod's sums (type Pod) by min,
// max and maxLimitRequestRatio; a claim's storage request (type
// PersistentVolumeClaim, on create and update) by min and max. A pod is
// only admitted on create: its containers' resources are fixed after.
// Refusals are Forbidden with Kubernetes' texts, every broken constraint
// listed. It runs before the quota admission, which charges the defaults.
type limitRanger struct{ store *storage.Store }

func (limitRanger) Release(context.Context, v1.Object) {}

func (a limitRanger) ranges(ctx context.Context, ns string) ([]*v1.LimitRange, error) {
	k, _ := kinds.Lookup("LimitRange")
	res, err := a.store.List(ctx, k, storage.ListOptions{Namespace: ns})
	if err != nil {
		return nil, err
	}
	out := make([]*v1.LimitRange, len(res.Items))
	for i, o := range res.Items {
		out[i] = o.(*v1.LimitRange)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetMetadata().GetName() < out[j].GetMetadata().GetName() })
	return out, nil
}

func (a limitRanger) Admit(ctx context.Context, obj, old v1.Object) error {
	var errs []string
	var plural string
	switch o := obj.(type) {
	case *v1.Pod:
		if old != nil || o.Spec == nil {
			return nil
		}
		lrs, err := a.ranges(ctx, o.GetMetadata().GetNamespace())
		if err != nil || len(lrs) == 0 {
			return err
		}
		plural = "pods"
		for _, lr := range lrs {
			applyContainerDefaults(o, lr)
		}
		for _, lr := range lrs {
			errs = append(errs, limitPod(lr, o)...)
		}
	case *v1.PersistentVolumeClaim:
		lrs, err := a.ranges(ctx, o.GetMetadata().GetNamespace())
		if err != nil || len(lrs) == 0 {
			return err
		}
		plural = "persistentvolumeclaims"
		for _, lr := range lrs {
			errs = append(errs, limitClaim(lr, o)...)
		}
	default:
		return nil
	}
	if len(errs) == 0 {
		return nil
	}
	msg := errs[0]
	if len(errs) > 1 {
		msg = "[" + strings.Join(errs, ", ") + "]"
	}
	return apierrors.New(apierrors.ErrForbidden, "%s %q is forbidden: %s", plural, obj.GetMetadata().GetName(), msg)
}

// applyContainerDefaults sets the requests and limits a container does not
// set from the range's Container item, and says so in the pod's
// kubernetes.io/limit-ranger annotation.
func applyContainerDefaults(p *v1.Pod, lr *v1.LimitRange) {
	var notes []string
	for _, item := range lr.GetSpec().GetLimits() {
		if item.Type != validation.LimitTypeContainer || (len(item.Default) == 0 && len(item.DefaultRequest) == 0) {
			continue
		}
		for _, list := range [][]*v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range list {
				if c.Resources == nil {
					c.Resources = &v1.ResourceRequirements{}
				}
				setReq := fill(&c.Resources.Requests, item.DefaultRequest)
				setLim := fill(&c.Resources.Limits, item.Default)
				if len(setReq) > 0 {
					notes = append(notes, strings.Join(setReq, ", ")+" request for container "+c.Name)
				}
				if len(setLim) > 0 {
					notes = append(notes, strings.Join(setLim, ", ")+" limit for container "+c.Name)
				}
			}
		}
	}
	if len(notes) == 0 {
		return
	}
	m := v1.Meta(p)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[LimitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
}

// fill copies the entries of src that dst lacks and returns their names.
func fill(dst *map[string]string, src map[string]string) []string {
	var set []string
	for k, v := range src {
		if _, ok := (*dst)[k]; ok {
			continue
		}
		if *dst == nil {
			*dst = map[string]string{}
		}
		(*dst)[k] = v
		set = append(set, k)
	}
	sort.Strings(set)
	return set
}

// amounts is a list of quantities by resource name, with the text each
// was written as (for messages).
type amounts map[string]amount

type amount struct {
	q    resource.Quantity
	text string
}

func parseAmounts(m map[string]string) amounts {
	out := amounts{}
	for k, v := range m {
		if q, err := resource.Parse(v); err == nil {
			out[k] = amount{q, v}
		}
	}
	return out
}

// sumAmounts adds lists; a resource missing from one of them is missing
// from the sum (Kubernetes' LimitRanger sum).
func sumAmounts(lists []amounts) amounts {
	out := amounts{}
	if len(lists) == 0 {
		return out
	}
	for k := range lists[0] {
		total, all := resource.Quantity{}, true
		for _, l := range lists {
			a, ok := l[k]
			if !ok {
				all = false
				break
			}
			total = total.Add(a.q)
		}
		if all {
			out[k] = amount{total, formatAmount(k, total)}
		}
	}
	return out
}

func formatAmount(name string, q resource.Quantity) string {
	if name == "cpu" {
		return q.CPUString()
	}
	return fmt.Sprint(q.Value())
}

// limitPod checks the pod's containers and sums against one range.
func limitPod(lr *v1.LimitRange, p *v1.Pod) []string {
	var errs []string
	for _, item := range lr.GetSpec().GetLimits() {
		switch item.Type {
		case validation.LimitTypeContainer:
			for _, list := range [][]*v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
				for _, c := range list {
					req, lim := parseAmounts(c.GetResources().GetRequests()), parseAmounts(c.GetResources().GetLimits())
					errs = append(errs, constraints(item, req, lim)...)
				}
			}
		case validation.LimitTypePod:
			var reqs, lims []amounts
			for _, c := range p.Spec.Containers {
				reqs = append(reqs, parseAmounts(c.GetResources().GetRequests()))
				lims = append(lims, parseAmounts(c.GetResources().GetLimits()))
			}
			req, lim := sumAmounts(reqs), sumAmounts(lims)
			// An init container runs alone: the pod needs the larger of
			// its own and the app containers' sum (Kubernetes' pod
			// requests).
			for _, c := range p.Spec.InitContainers {
				maxInto(req, parseAmounts(c.GetResources().GetRequests()))
				maxInto(lim, parseAmounts(c.GetResources().GetLimits()))
			}
			// Pod-level requests and limits, where set, are the pod's
			// (Kubernetes' PodRequests and PodLimits).
			for k, a := range parseAmounts(p.Spec.GetResources().GetRequests()) {
				req[k] = a
			}
			for k, a := range parseAmounts(p.Spec.GetResources().GetLimits()) {
				lim[k] = a
			}
			errs = append(errs, constraints(item, req, lim)...)
		}
	}
	return errs
}

func maxInto(dst, src amounts) {
	for k, a := range src {
		if cur, ok := dst[k]; ok && cur.q.Cmp(a.q) < 0 {
			dst[k] = a
		}
	}
}

// constraints checks one item's min, max and ratio against requests and
// limits, with Kubernetes' messages.
func constraints(item *v1.LimitRangeItem, req, lim amounts) []string {
	var errs []string
	typ := item.Type
	for _, k := range sortedNames(item.Min) {
		min, err := resource.Parse(item.Min[k])
		if err != nil {
			continue
		}
		r, hasReq := req[k]
		l, hasLim := lim[k]
		switch {
		case !hasReq:
			errs = append(errs, fmt.Sprintf("minimum %s usage per %s is %s.  No request is specified", k, typ, item.Min[k]))
		case r.q.Cmp(min) < 0:
			errs = append(errs, fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", k, typ, item.Min[k], r.text))
		case hasLim && l.q.Cmp(min) < 0:
			errs = append(errs, fmt.Sprintf("minimum %s usage per %s is %s, but limit is %s", k, typ, item.Min[k], l.text))
		}
	}
	for _, k := range sortedNames(item.Max) {
		max, err := resource.Parse(item.Max[k])
		if err != nil {
			continue
		}
		r, hasReq := req[k]
		l, hasLim := lim[k]
		switch {
		case !hasLim:
			errs = append(errs, fmt.Sprintf("maximum %s usage per %s is %s.  No limit is specified", k, typ, item.Max[k]))
		case l.q.Cmp(max) > 0:
			errs = append(errs, fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", k, typ, item.Max[k], l.text))
		case hasReq && r.q.Cmp(max) > 0:
			errs = append(errs, fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", k, typ, item.Max[k], r.text))
		}
	}
	for _, k := range sortedNames(item.MaxLimitRequestRatio) {
		ratio, err := resource.Parse(item.MaxLimitRequestRatio[k])
		if err != nil {
			continue
		}
		r, hasReq := req[k]
		l, hasLim := lim[k]
		switch {
		case !hasReq || r.q.IsZero():
			errs = append(errs, fmt.Sprintf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", k, typ, item.MaxLimitRequestRatio[k]))
		case !hasLim || l.q.IsZero():
			errs = append(errs, fmt.Sprintf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", k, typ, item.MaxLimitRequestRatio[k]))
		default:
			observed := float64(l.q.MilliValue()) / float64(r.q.MilliValue())
			if observed*1000 > float64(ratio.MilliValue()) {
				errs = append(errs, fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %f", k, typ, item.MaxLimitRequestRatio[k], observed))
			}
		}
	}
	return errs
}

// limitClaim bounds a claim's storage request by the range's
// PersistentVolumeClaim item (its limits are not what the user asks for).
func limitClaim(lr *v1.LimitRange, pvc *v1.PersistentVolumeClaim) []string {
	var errs []string
	req := parseAmounts(pvc.GetSpec().GetResources().GetRequests())
	for _, item := range lr.GetSpec().GetLimits() {
		if item.Type != validation.LimitTypeClaim {
			continue
		}
		for _, k := range sortedNames(item.Min) {
			min, err := resource.Parse(item.Min[k])
			if err != nil {
				continue
			}
			if r, ok := req[k]; !ok {
				errs = append(errs, fmt.Sprintf("minimum %s usage per %s is %s.  No request is specified", k, item.Type, item.Min[k]))
			} else if r.q.Cmp(min) < 0 {
				errs = append(errs, fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", k, item.Type, item.Min[k], r.text))
			}
		}
		for _, k := range sortedNames(item.Max) {
			max, err := resource.Parse(item.Max[k])
			if err != nil {
				continue
			}
			if r, ok := req[k]; !ok {
				errs = append(errs, fmt.Sprintf("maximum %s usage per %s is %s.  No request is specified", k, item.Type, item.Max[k]))
			} else if r.q.Cmp(max) > 0 {
				errs = append(errs, fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", k, item.Type, item.Max[k], r.text))
			}
		}
	}
	return errs
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
