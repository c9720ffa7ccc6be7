package apiserver

import (
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The resize subresource of pods (Kubernetes' pods/resize, in-place pod
// vertical scaling): get, update and patch of a pod authorized on
// pods/resize, whose write takes only the containers' (and sidecars')
// resources and resize policies from the request — everything else is
// kept as stored, as Kubernetes' ResizeStrategy drops it — and is checked
// by validation.PodResize (cpu and memory only, nothing removed, the QoS
// class fixed) instead of the pod update rules, which keep refusing a
// resources change through the pod itself. The kubelet then admits the
// new requests against its node and applies them (kubelet/pod resize.go).

// resizeSubresource checks that kind k has the resize subresource.
func resizeSubresource(k *kinds.Kind) error {
	if k.Name != "Pod" {
		return apierrors.New(apierrors.ErrNotFound, "%s have no resize subresource", k.Plural)
	}
	return nil
}

// withResize is cur with the resources and resize policies of in's
// containers of the same names (Kubernetes' dropNonResizeUpdates).
func withResize(cur, in v1.Object) (v1.Object, error) {
	was, ok := cur.(*v1.Pod)
	is, ok2 := in.(*v1.Pod)
	if !ok || !ok2 {
		return nil, apierrors.Invalid("kind", "only pods can be resized")
	}
	next := proto.Clone(was).(*v1.Pod)
	take := func(dst, src []*v1.Container) {
		byName := map[string]*v1.Container{}
		for _, c := range src {
			byName[c.GetName()] = c
		}
		for _, c := range dst {
			if n, ok := byName[c.Name]; ok {
				c.Resources = nil
				if r := n.GetResources(); r != nil {
					c.Resources = proto.Clone(r).(*v1.ResourceRequirements)
				}
				c.ResizePolicy = n.GetResizePolicy()
			}
		}
	}
	take(next.GetSpec().GetContainers(), is.GetSpec().GetContainers())
	take(next.GetSpec().GetInitContainers(), is.GetSpec().GetInitContainers())
	// Pod-level resources are kept from the request, so that
	// validation.PodResize refuses a change (Kubernetes without
	// InPlacePodLevelResourcesVerticalScaling drops it silently).
	if next.Spec != nil {
		next.Spec.Resources = nil
		if r := is.GetSpec().GetResources(); r != nil {
			next.Spec.Resources = proto.Clone(r).(*v1.ResourceRequirements)
		}
	}
	return next, nil
}
