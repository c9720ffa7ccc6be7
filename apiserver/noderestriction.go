package apiserver

import (
	"context"

	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// nodeRestriction is the Node admission step that limits what a kubelet
// may write of its own Node, as Kubernetes' NodeRestriction does (the node
// authorizer already keeps it to its own Node): no labels of the
// kubernetes.io and k8s.io namespaces but the ones kubelets set (so no
// node-role.kubernetes.io/* and no node-restriction.kubernetes.io/*: a
// node cannot make itself a control-plane node or steer restricted pods
// to itself); no spec.podCIDR(s) (the node IPAM controller, or an admin,
// assigns them: a node claiming another's CIDR would take its traffic);
// and, once registered, no change to its taints.
type nodeRestriction struct{}

func (nodeRestriction) Release(context.Context, v1.Object) {}

func (nodeRestriction) Admit(ctx context.Context, obj, old v1.Object) error {
	node, isNode := auth.UserFrom(ctx).NodeName()
	if !isNode {
		return nil
	}
	n := obj.(*v1.Node)
	var o *v1.Node
	if old != nil {
		o = old.(*v1.Node)
	}
	changed := changedLabels(o.GetMetadata().GetLabels(), n.GetMetadata().GetLabels())
	var bad []string
	for _, k := range changed {
		if forbiddenNodeLabel(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		verb := "set"
		if o != nil {
			verb = "modify"
		}
		return apierrors.New(apierrors.ErrForbidden, "node %q is not allowed to %s the following labels: %s (labels of the kubernetes.io and k8s.io namespaces other than the kubelet's own are set by an admin)", node, verb, strings.Join(bad, ", "))
	}
	if n.GetSpec().GetPodCidr() != o.GetSpec().GetPodCidr() || !slices.Equal(n.GetSpec().GetPodCidrs(), o.GetSpec().GetPodCidrs()) {
		return apierrors.New(apierrors.ErrForbidden, "node %q is not allowed to set spec.podCIDR: the node IPAM controller (or an admin) assigns a node's pod CIDR", node)
	}
	if o != nil && !taintsEqual(o.GetSpec().GetTaints(), n.GetSpec().GetTaints()) {
		return apierrors.New(apierrors.ErrForbidden, "node %q is not allowed to modify taints (an admin does: tugctl taint)", node)
	}
	return nil
}

// changedLabels are the keys added, removed or changed from old to new.
func changedLabels(old, new map[string]string) []string {
	var out []string
	for k, v := range new {
		if ov, ok := old[k]; !ok || ov != v {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// kubeletLabels are the kubernetes.io labels a kubelet sets on its Node
// (Kubernetes' kubeletapis.IsKubeletLabel), and kubeletLabelNamespaces the
// namespaces it owns.
var (
	kubeletLabels = []string{
		"kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
		"beta.kubernetes.io/os", "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type",
		"node.kubernetes.io/instance-type", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
		"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
	}
	kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
)

func labelNamespace(key string) string {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	return ns
}

func inNamespace(ns, domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }

// forbiddenNodeLabel reports whether a node may not set label key on itself.
func forbiddenNodeLabel(key string) bool {
	ns := labelNamespace(key)
	if inNamespace(ns, "node-restriction.kubernetes.io") {
		return true
	}
	if !inNamespace(ns, "kubernetes.io") && !inNamespace(ns, "k8s.io") {
		return false
	}
	if slices.Contains(kubeletLabels, key) {
		return false
	}
	for _, allowed := range kubeletLabelNamespaces {
		if inNamespace(ns, allowed) {
			return false
		}
	}
	return true
}

func taintsEqual(a, b []*v1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y *v1.Taint) bool { return proto.Equal(x, y) })
}
