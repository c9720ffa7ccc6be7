package apiserver

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// priorityAdmission is Kubernetes' Priority admission: a pod gets the
// value (and preemption policy) of the PriorityClass it names, or of the
// globalDefault class when it names none (else 0); a pod naming a missing
// class, or setting spec.priority itself to another value, is refused.
// For PriorityClasses it keeps globalDefault on at most one class.
type priorityAdmission struct{ store *storage.Store }

func (priorityAdmission) Release(context.Context, v1.Object) {}

func (a priorityAdmission) classes(ctx context.Context) ([]*v1.PriorityClass, error) {
	k, _ := kinds.Lookup("PriorityClass")
	res, err := a.store.List(ctx, k, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*v1.PriorityClass, len(res.Items))
	for i, o := range res.Items {
		out[i] = o.(*v1.PriorityClass)
	}
	return out, nil
}

func (a priorityAdmission) Admit(ctx context.Context, obj, old v1.Object) error {
	switch o := obj.(type) {
	case *v1.PriorityClass:
		return a.admitClass(ctx, o)
	case *v1.Pod:
		if old != nil || o.Spec == nil {
			return nil
		}
		return a.admitPod(ctx, o)
	}
	return nil
}

func (a priorityAdmission) admitClass(ctx context.Context, pc *v1.PriorityClass) error {
	if !pc.GlobalDefault {
		return nil
	}
	all, err := a.classes(ctx)
	if err != nil {
		return err
	}
	for _, c := range all {
		if c.GlobalDefault && c.GetMetadata().GetName() != pc.GetMetadata().GetName() {
			return apierrors.Invalid("globalDefault", "Forbidden: globalDefault is already set to PriorityClass %s: only one class may be the default", c.GetMetadata().GetName())
		}
	}
	return nil
}

func (a priorityAdmission) admitPod(ctx context.Context, p *v1.Pod) error {
	s := p.Spec
	var class *v1.PriorityClass
	if s.PriorityClassName != "" {
		k, _ := kinds.Lookup("PriorityClass")
		o, err := a.store.Get(ctx, k, "", s.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return apierrors.New(apierrors.ErrForbidden, "pods %q is forbidden: no PriorityClass with name %s was found", p.GetMetadata().GetName(), s.PriorityClassName)
		}
		if err != nil {
			return err
		}
		class = o.(*v1.PriorityClass)
	} else {
		all, err := a.classes(ctx)
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(all, func(c *v1.PriorityClass) bool { return c.GlobalDefault }); i >= 0 {
			class = all[i]
		}
	}
	var value int32
	if class != nil {
		value = class.Value
	}
	if s.Priority != 0 && s.Priority != value {
		return apierrors.New(apierrors.ErrForbidden, "pods %q is forbidden: the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name",
			p.GetMetadata().GetName(), s.Priority, value)
	}
	s.Priority = value
	if class != nil {
		s.PriorityClassName = class.GetMetadata().GetName()
		if s.PreemptionPolicy == nil && class.PreemptionPolicy != nil {
			s.PreemptionPolicy = proto.String(class.GetPreemptionPolicy())
		}
	}
	return nil
}

// systemPriorityClasses are made at start, as kube-apiserver makes them.
func systemPriorityClasses() []*v1.PriorityClass {
	descriptions := map[string]string{
		"system-cluster-critical": "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
		"system-node-critical":    "Used for system critical pods that must not be moved from their current node.",
	}
	var out []*v1.PriorityClass
	for _, name := range []string{"system-cluster-critical", "system-node-critical"} {
		out = append(out, &v1.PriorityClass{Metadata: &v1.ObjectMeta{Name: name}, Value: validation.SystemPriorityClasses[name], Description: descriptions[name]})
	}
	return out
}

func (s *Server) ensureSystemPriorityClasses(ctx context.Context) error {
	for _, pc := range systemPriorityClasses() {
		if _, err := s.create(ctx, pc, false); err != nil && !isAlreadyExists(err) {
			return fmt.Errorf("creating PriorityClass %s: %w", pc.GetMetadata().GetName(), err)
		}
	}
	return nil
}
