package apiserver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/quota"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// quotaAdmission is Kubernetes' ResourceQuota admission. A new object (or
// an update that uses more: a claim resized, a Service turned NodePort) is
// charged to every quota of its namespace that holds a name it uses:
// status.used grows by its usage through a compare-and-swap on the quota
// (read from etcd, written with the version read, retried on conflict),
// so concurrent creates never overshoot. A charge over status.hard is
// refused with Forbidden "exceeded quota: NAME, requested: ..., used: ...,
// limited: ..."; a pod without a request a cpu/memory quota needs with
// "failed quota: NAME: must specify ...". When the object is deleted, or
// its create fails after the charge, Release gives its usage back; the
// quota controller recounts from the objects after that (terminal pods,
// drift) and periodically.
//
// For ResourceQuotas themselves it keeps status.hard equal to spec.hard,
// and counts the namespace's current usage of the names a create or an
// update adds, so a quota is enforced from the moment it is stored.
type quotaAdmission struct{ store *storage.Store }

type charge struct {
	quota string
	usage quota.List
}

func newQuotaAdmission(store *storage.Store) *quotaAdmission { return &quotaAdmission{store: store} }

// register adds the admission last for every namespaced kind, after the
// steps that set what it charges (LimitRanger defaults).
func (a *quotaAdmission) register(admission map[string][]Admitter) {
	for _, k := range kinds.All() {
		if k.Namespaced {
			admission[k.Name] = append(admission[k.Name], a)
		}
	}
}

func quotaKind() *kinds.Kind { k, _ := kinds.Lookup("ResourceQuota"); return k }

func (a *quotaAdmission) quotas(ctx context.Context, ns string) ([]*v1.ResourceQuota, error) {
	res, err := a.store.List(ctx, quotaKind(), storage.ListOptions{Namespace: ns})
	if err != nil {
		return nil, err
	}
	out := make([]*v1.ResourceQuota, len(res.Items))
	for i, o := range res.Items {
		out[i] = o.(*v1.ResourceQuota)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetMetadata().GetName() < out[j].GetMetadata().GetName() })
	return out, nil
}

func (a *quotaAdmission) Admit(ctx context.Context, obj, old v1.Object) error {
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return err
	}
	if rq, ok := obj.(*v1.ResourceQuota); ok {
		if err := a.admitQuota(ctx, rq, old); err != nil {
			return err
		}
	}
	usage := quota.Usage(k.GroupResource(), obj)
	if old != nil {
		usage = quota.SubtractFloor(usage, quota.Usage(k.GroupResource(), old))
		if quota.IsZero(usage) {
			return nil
		}
	}
	ns := obj.GetMetadata().GetNamespace()
	qs, err := a.quotas(ctx, ns)
	if err != nil {
		return err
	}
	var done []charge
	for _, q := range qs {
		if k.Name == "ResourceQuota" && q.GetMetadata().GetName() == obj.GetMetadata().GetName() {
			continue // a quota does not charge itself (Kubernetes' neither)
		}
		c, err := a.chargeOne(ctx, k, obj, old == nil, q.GetMetadata().GetName(), usage)
		if err != nil {
			a.refund(ctx, ns, done)
			return err
		}
		if c != nil {
			done = append(done, *c)
		}
	}
	return nil
}

// chargeOne adds usage to one quota, compare-and-swap, and returns what it
// charged (nil when the quota holds none of the names).
func (a *quotaAdmission) chargeOne(ctx context.Context, k *kinds.Kind, obj v1.Object, create bool, name string, usage quota.List) (*charge, error) {
	ns := obj.GetMetadata().GetNamespace()
	for attempt := 0; ; attempt++ {
		cur, err := a.store.Get(ctx, quotaKind(), ns, name)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		q := cur.(*v1.ResourceQuota)
		hard := q.GetStatus().GetHard()
		if hard == nil {
			hard = q.GetSpec().GetHard()
		}
		restricted := quota.Matching(k.Name, k.GroupResource(), hard)
		if len(restricted) == 0 {
			return nil, nil
		}
		if create {
			if err := quota.Constraints(obj, restricted); err != nil {
				return nil, forbidden(k, obj, "failed quota: %s: %v", name, err)
			}
		}
		var unknown []string
		for _, r := range restricted {
			if _, ok := q.GetStatus().GetUsed()[r]; !ok {
				unknown = append(unknown, r)
			}
		}
		if len(unknown) > 0 {
			return nil, forbidden(k, obj, "status unknown for quota: %s, resources: %s", name, strings.Join(unknown, ","))
		}
		requested := quota.Mask(usage, restricted)
		if quota.IsZero(requested) {
			return nil, nil
		}
		used, limit := quota.Parse(q.Status.Used), quota.Parse(hard)
		next := quota.Add(used, requested)
		if over := quota.Exceeded(next, limit); len(over) > 0 {
			return nil, forbidden(k, obj, "exceeded quota: %s, requested: %s, used: %s, limited: %s", name,
				quota.PrettyPrint(quota.Mask(requested, over)), quota.PrettyPrint(quota.Mask(used, over)), quota.PrettyPrint(quota.Mask(limit, over)))
		}
		upd := proto.Clone(q).(*v1.ResourceQuota)
		if upd.Status.Used == nil {
			upd.Status.Used = map[string]string{}
		}
		for n, v := range quota.Mask(next, restricted).Strings() {
			upd.Status.Used[n] = v
		}
		if _, err := a.store.Update(ctx, quotaKind(), upd, q.GetMetadata().GetResourceVersion()); err != nil {
			if apierrors.IsConflict(err) && attempt < 500 && ctx.Err() == nil {
				continue
			}
			return nil, err
		}
		return &charge{quota: name, usage: requested}, nil
	}
}

// forbidden is Kubernetes' admission refusal: `pods "web" is forbidden: ...`.
func forbidden(k *kinds.Kind, obj v1.Object, format string, args ...any) error {
	return apierrors.New(apierrors.ErrForbidden, "%s %q is forbidden: %s", k.GroupResource(), obj.GetMetadata().GetName(), fmt.Sprintf(format, args...))
}

// refund takes charges back (best effort: the quota controller recounts).
func (a *quotaAdmission) refund(ctx context.Context, ns string, charges []charge) {
	for _, c := range charges {
		_, _ = a.store.GuaranteedUpdate(ctx, quotaKind(), ns, c.quota, func(cur v1.Object) (v1.Object, error) {
			q := proto.Clone(cur).(*v1.ResourceQuota)
			if q.Status == nil {
				return q, nil
			}
			used := quota.Parse(q.Status.Used)
			for n, v := range quota.SubtractFloor(quota.Mask(used, keys(c.usage)), c.usage).Strings() {
				q.Status.Used[n] = v
			}
			return q, nil
		})
	}
}

func keys(l quota.List) []string {
	out := make([]string, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	return out
}

// Release gives back what obj used — its create failed after the charge
// (or was a dry run), or it was deleted: every quota of its namespace that
// holds a name it uses is refunded its usage, never below zero (the
// controller's recount corrects an object that was never counted).
func (a *quotaAdmission) Release(ctx context.Context, obj v1.Object) {
	ns := obj.GetMetadata().GetNamespace()
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return
	}
	a.refundMatching(ctx, k, ns, quota.Usage(k.GroupResource(), obj), obj.GetMetadata().GetName())
}

// refundMatching refunds usage to every quota of ns that holds a name it
// uses (a quota's own object aside).
func (a *quotaAdmission) refundMatching(ctx context.Context, k *kinds.Kind, ns string, usage quota.List, name string) {
	qs, err := a.quotas(ctx, ns)
	if err != nil {
		return
	}
	for _, q := range qs {
		if k.Name == "ResourceQuota" && q.GetMetadata().GetName() == name {
			continue
		}
		restricted := quota.Matching(k.Name, k.GroupResource(), q.GetStatus().GetHard())
		if len(restricted) == 0 {
			continue
		}
		a.refund(ctx, ns, []charge{{quota: q.GetMetadata().GetName(), usage: quota.Mask(usage, restricted)}})
	}
}

// admitQuota keeps a quota's status.hard equal to spec.hard and counts the
// namespace's usage of the names it newly holds.
func (a *quotaAdmission) admitQuota(ctx context.Context, rq *v1.ResourceQuota, old v1.Object) error {
	var prev *v1.ResourceQuotaStatus
	if o, ok := old.(*v1.ResourceQuota); ok {
		prev = o.GetStatus()
	}
	var errs apierrors.FieldErrors
	for _, n := range sortedNames(rq.GetSpec().GetHard()) {
		if _, gr := quota.KindOf(n); gr != "" && kinds.QuotaKind(n) == nil {
			errs.Add("spec.hard."+n, "no namespaced kind has the resource %q (count/<resource>.<group>, as count/deployments.apps, or count/<resource> for the core group)", gr)
		}
	}
	if err := errs.Err("ResourceQuota", rq.GetMetadata().GetName()); err != nil {
		return err
	}
	st := &v1.ResourceQuotaStatus{Hard: map[string]string{}, Used: map[string]string{}}
	var missing []string
	for n, v := range rq.GetSpec().GetHard() {
		st.Hard[n] = v
		if u, ok := prev.GetUsed()[n]; ok {
			st.Used[n] = u
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		used, err := countUsage(ctx, a.store, rq.GetMetadata().GetNamespace(), missing)
		if err != nil {
			return err
		}
		for n, v := range used.Strings() {
			st.Used[n] = v
		}
		if old == nil {
			// The quota being created counts itself in resourcequotas.
			for _, n := range missing {
				if n == "resourcequotas" || n == "count/resourcequotas" {
					st.Used[n] = quota.Format(n, used[n].Add(quota.Parse(map[string]string{n: "1"})[n]))
				}
			}
		}
	}
	rq.Status = st
	return nil
}

// countUsage sums the usage of names over the namespace's stored objects.
func countUsage(ctx context.Context, store *storage.Store, ns string, names []string) (quota.List, error) {
	total := quota.List{}
	for _, n := range names {
		total[n] = quota.List{}[n]
	}
	byKind := map[*kinds.Kind][]string{}
	for _, n := range names {
		if k := kinds.QuotaKind(n); k != nil {
			byKind[k] = append(byKind[k], n)
		}
	}
	for k, ns2 := range byKind {
		res, err := store.List(ctx, k, storage.ListOptions{Namespace: ns})
		if err != nil {
			return nil, err
		}
		for _, o := range res.Items {
			total = quota.Add(total, quota.Mask(quota.Usage(k.GroupResource(), o), ns2))
		}
	}
	return total, nil
}

// UpdateCommitted keeps the charge of an update that was stored.
func (a *quotaAdmission) UpdateCommitted(context.Context, v1.Object, v1.Object) {}

// UpdateAborted gives back what an update that was not stored (a lost
// compare-and-swap, which retries and charges again, or a dry run) charged.
func (a *quotaAdmission) UpdateAborted(ctx context.Context, old, new v1.Object) {
	k, err := kinds.ForMessage(new)
	if err != nil {
		return
	}
	delta := quota.SubtractFloor(quota.Usage(k.GroupResource(), new), quota.Usage(k.GroupResource(), old))
	if quota.IsZero(delta) {
		return
	}
	a.refundMatching(ctx, k, new.GetMetadata().GetNamespace(), delta, new.GetMetadata().GetName())
}
