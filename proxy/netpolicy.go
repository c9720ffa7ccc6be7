package proxy

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/proxy/netpol"
)

// policySource is the network policy agent's view of the caches.
type policySource struct {
	pods     *informer.Informer[*v1.Pod]
	ns       *informer.Informer[*v1.Namespace]
	policies *informer.Informer[*v1.NetworkPolicy]
}

func (s *policySource) Pods() []*v1.Pod { return s.pods.List() }
func (s *policySource) Namespace(name string) (*v1.Namespace, bool) {
	return s.ns.Get(name)
}
func (s *policySource) NetworkPolicies() []*v1.NetworkPolicy { return s.policies.List() }

// watchPolicies wakes the agent on the changes that can change a node's
// rules: any policy change; a pod's labels, address, node, phase or named
// ports; a namespace's labels. (Status churn such as a pod's conditions
// does not.)
func watchPolicies(s *policySource, a *netpol.Agent) {
	changed := func() { a.Changed() }
	s.policies.AddHandler(informer.Handler[*v1.NetworkPolicy]{
		OnAdd:    func(*v1.NetworkPolicy) { changed() },
		OnUpdate: func(old, p *v1.NetworkPolicy) { changed() },
		OnDelete: func(*v1.NetworkPolicy) { changed() },
	})
	s.pods.AddHandler(informer.Handler[*v1.Pod]{
		OnAdd: func(*v1.Pod) { changed() },
		OnUpdate: func(old, p *v1.Pod) {
			if podPolicyFacts(old) != podPolicyFacts(p) || !maps.Equal(old.GetMetadata().GetLabels(), p.GetMetadata().GetLabels()) ||
				!slices.EqualFunc(old.GetSpec().GetContainers(), p.GetSpec().GetContainers(), func(a, b *v1.Container) bool {
					return slices.EqualFunc(a.GetPorts(), b.GetPorts(), func(x, y *v1.ContainerPort) bool { return proto.Equal(x, y) })
				}) {
				changed()
			}
		},
		OnDelete: func(*v1.Pod) { changed() },
	})
	s.ns.AddHandler(informer.Handler[*v1.Namespace]{
		OnAdd: func(*v1.Namespace) { changed() },
		OnUpdate: func(old, n *v1.Namespace) {
			if !maps.Equal(old.GetMetadata().GetLabels(), n.GetMetadata().GetLabels()) {
				changed()
			}
		},
		OnDelete: func(*v1.Namespace) { changed() },
	})
}

type podFacts struct {
	ip, node, phase string
	hostNetwork     bool
}

func podPolicyFacts(p *v1.Pod) podFacts {
	return podFacts{p.GetStatus().GetPodIp(), p.GetSpec().GetNodeName(), p.GetStatus().GetPhase(), p.GetSpec().GetHostNetwork()}
}
