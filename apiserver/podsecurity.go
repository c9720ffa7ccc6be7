package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/podsecurity"
	"github.com/tugboat/tugboat/apiserver/storage"
	"github.com/tugboat/tugboat/apiserver/warning"
)

// PodSecurityConfig is the cluster's Pod Security admission.
type PodSecurityConfig struct {
	// Defaults are the policies of a namespace without pod-security
	// labels, as --pod-security writes them
	// ("enforce=baseline,warn=restricted"; a mode not named is
	// privileged). "" is podsecurity.DefaultPolicies (enforce=baseline);
	// "enforce=privileged" turns Pod Security off for such namespaces, as
	// Kubernetes' own default.
	Defaults string
	// ExemptNamespaces are not evaluated at all (nil: kube-system, where
	// the cluster's own components run).
	ExemptNamespaces []string
}

// DefaultPodSecurity is --pod-security's default,
// podsecurity.DefaultPolicies: enforce=baseline.
const DefaultPodSecurity = podsecurity.DefaultPolicies

// Audit annotations, Kubernetes' keys.
const (
	auditEnforcePolicy   = "pod-security.kubernetes.io/enforce-policy"
	auditViolations      = "pod-security.kubernetes.io/audit-violations"
	auditExempt          = "pod-security.kubernetes.io/exempt"
	maxExistingPodWarned = 10
)

// podSecurity is the admission step of Pod Security: pods are refused
// (enforce), warned about (warn) and annotated in the audit log (audit) by
// their namespace's policies; workloads with a pod template (Deployment,
// Job...) only warned and audited, as in Kubernetes, since the pods they
// make are checked when created; namespaces get their labels validated and
// a warning listing existing pods that violate a new enforce level.
type podSecurity struct {
	store    *storage.Store
	defaults podsecurity.Policies
	exempt   []string
}

func newPodSecurity(store *storage.Store, cfg PodSecurityConfig) (*podSecurity, error) {
	if cfg.Defaults == "" {
		cfg.Defaults = podsecurity.DefaultPolicies
	}
	d, err := podsecurity.ParseDefaults(cfg.Defaults)
	if err != nil {
		return nil, fmt.Errorf("--pod-security: %v", err)
	}
	exempt := cfg.ExemptNamespaces
	if exempt == nil {
		exempt = []string{"kube-system"}
	}
	return &podSecurity{store: store, defaults: d, exempt: exempt}, nil
}

func (p *podSecurity) register(admission map[string][]Admitter) {
	for _, k := range []string{"Namespace", "Pod", "ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob"} {
		admission[k] = append(admission[k], p)
	}
}

func (*podSecurity) Release(context.Context, v1.Object) {}

// podTemplate is the pod spec a workload makes its pods from (nil for
// other kinds).
func podTemplate(obj v1.Object) *v1.PodSpec {
	switch o := obj.(type) {
	case *v1.ReplicaSet:
		return o.GetSpec().GetTemplate().GetSpec()
	case *v1.Deployment:
		return o.GetSpec().GetTemplate().GetSpec()
	case *v1.DaemonSet:
		return o.GetSpec().GetTemplate().GetSpec()
	case *v1.StatefulSet:
		return o.GetSpec().GetTemplate().GetSpec()
	case *v1.Job:
		return o.GetSpec().GetTemplate().GetSpec()
	case *v1.CronJob:
		return o.GetSpec().GetJobTemplate().GetSpec().GetTemplate().GetSpec()
	}
	return nil
}

func (p *podSecurity) Admit(ctx context.Context, obj, old v1.Object) error {
	if ns, ok := obj.(*v1.Namespace); ok {
		return p.admitNamespace(ctx, ns, old)
	}
	m := obj.GetMetadata()
	if slices.Contains(p.exempt, m.GetNamespace()) {
		warning.Annotate(ctx, auditExempt, "namespace")
		return nil
	}
	pod, isPod := obj.(*v1.Pod)
	var spec *v1.PodSpec
	if isPod {
		// Kubernetes evaluates an update only when it changes the spec in
		// a way that matters; a pod's spec may only change its images,
		// tolerations and deadline after create — and its ephemeral
		// containers, through pods/ephemeralcontainers, which are checked.
		if old != nil && slices.EqualFunc(pod.GetSpec().GetEphemeralContainers(), old.(*v1.Pod).GetSpec().GetEphemeralContainers(),
			func(a, b *v1.EphemeralContainer) bool { return proto.Equal(a, b) }) {
			return nil
		}
		spec = pod.Spec
	} else {
		spec = podTemplate(obj)
		if spec == nil {
			return nil
		}
		// An update that keeps the template is not evaluated again.
		if old != nil && proto.Equal(spec, podTemplate(old)) {
			return nil
		}
	}
	pols, err := p.policies(ctx, m.GetNamespace())
	if err != nil {
		return err
	}
	if isPod {
		enforce := pols[podsecurity.Enforce]
		warning.Annotate(ctx, auditEnforcePolicy, enforce.String())
		if vs := podsecurity.Check(enforce, spec); len(vs) > 0 {
			return apierrors.New(apierrors.ErrForbidden, "pods %q is forbidden: violates %s", m.GetName(), podsecurity.Message(enforce, vs))
		}
	}
	if a := pols[podsecurity.Audit]; a.Level != podsecurity.Privileged {
		if vs := podsecurity.Check(a, spec); len(vs) > 0 {
			warning.Annotate(ctx, auditViolations, "would violate "+podsecurity.Message(a, vs))
		}
	}
	if w := pols[podsecurity.Warn]; w.Level != podsecurity.Privileged {
		if vs := podsecurity.Check(w, spec); len(vs) > 0 {
			warning.Add(ctx, "would violate "+podsecurity.Message(w, vs))
		}
	}
	return nil
}

// policies are a namespace's Pod Security policies from its labels.
func (p *podSecurity) policies(ctx context.Context, ns string) (podsecurity.Policies, error) {
	nsKind, _ := kinds.Lookup("Namespace")
	obj, err := p.store.Get(ctx, nsKind, "", ns)
	if err != nil {
		return nil, err
	}
	return podsecurity.FromLabels(obj.GetMetadata().GetLabels(), p.defaults), nil
}

// admitNamespace validates the pod-security labels and, when the enforce
// policy changes, warns about the namespace's pods that violate the new
// one (they keep running, as in Kubernetes).
func (p *podSecurity) admitNamespace(ctx context.Context, ns *v1.Namespace, old v1.Object) error {
	var errs apierrors.FieldErrors
	podsecurity.ValidateLabels(&errs, "metadata.labels", ns.GetMetadata().GetLabels())
	if err := errs.Err("Namespace", ns.GetMetadata().GetName()); err != nil {
		return err
	}
	if old == nil || slices.Contains(p.exempt, ns.GetMetadata().GetName()) {
		return nil
	}
	before := podsecurity.FromLabels(old.GetMetadata().GetLabels(), p.defaults)[podsecurity.Enforce]
	after := podsecurity.FromLabels(ns.GetMetadata().GetLabels(), p.defaults)[podsecurity.Enforce]
	if before == after || after.Level == podsecurity.Privileged {
		return nil
	}
	podKind, _ := kinds.Lookup("Pod")
	res, err := p.store.List(ctx, podKind, storage.ListOptions{Namespace: ns.GetMetadata().GetName()})
	if err != nil {
		return err
	}
	var lines []string
	violating := 0
	for _, o := range res.Items {
		pod := o.(*v1.Pod)
		vs := podsecurity.Check(after, pod.Spec)
		if len(vs) == 0 {
			continue
		}
		violating++
		if len(lines) < maxExistingPodWarned {
			reasons := make([]string, len(vs))
			for i, v := range vs {
				reasons[i] = v.Reason
			}
			lines = append(lines, fmt.Sprintf("%s: %s", pod.GetMetadata().GetName(), strings.Join(reasons, ", ")))
		}
	}
	if violating == 0 {
		return nil
	}
	warning.Add(ctx, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", ns.GetMetadata().GetName(), after.String()))
	for _, l := range lines {
		warning.Add(ctx, l)
	}
	if violating > len(lines) {
		warning.Add(ctx, fmt.Sprintf("(and %d other pods)", violating-len(lines)))
	}
	return nil
}
