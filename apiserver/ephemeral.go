package apiserver

import (
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The ephemeralcontainers subresource of pods, as Kubernetes serves it
// (kubectl debug writes it with a strategic merge patch): read with Get,
// written with Update or Patch, each with subresource
// "ephemeralcontainers", authorized as get, update and patch on
// pods/ephemeralcontainers — not on pods, so that debugging can be granted
// alone, and a kubelet (whose node authorizer grants it pods and
// pods/status only) cannot add a container to a pod. A write takes
// spec.ephemeralContainers from the body (an Update's pod, or the pod as
// a Patch leaves it) and everything else as stored; validation
// (api/validation PodEphemeralContainersUpdate) lets the list only grow.
// An update of the pod itself may not change the list, and a create may
// not set it.

const ephemeralContainers = "ephemeralcontainers"

// ephemeralSubresource checks that kind k has the ephemeralcontainers
// subresource (pods only).
func ephemeralSubresource(k *kinds.Kind) error {
	if k.Name != "Pod" {
		return apierrors.New(apierrors.ErrNotFound, "%s have no ephemeralcontainers subresource", k.Plural)
	}
	return nil
}

// withEphemeralContainers is cur (a stored pod) with the ephemeral
// containers of user.
func withEphemeralContainers(cur, user v1.Object) v1.Object {
	next := proto.Clone(cur).(*v1.Pod)
	var list []*v1.EphemeralContainer
	for _, c := range user.(*v1.Pod).GetSpec().GetEphemeralContainers() {
		list = append(list, proto.Clone(c).(*v1.EphemeralContainer))
	}
	if next.Spec == nil {
		next.Spec = &v1.PodSpec{}
	}
	next.Spec.EphemeralContainers = list
	return next
}
