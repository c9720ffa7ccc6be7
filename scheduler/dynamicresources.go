package scheduler

import (
	"fmt"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// Dynamic resource allocation, the scheduler's part (Kubernetes'
// DynamicResources plugin). Before each decision a pod's
// spec.resourceClaims are looked up in the claim cache (claimsStatus):
// each entry's ResourceClaim (by resourceClaimName, or the one the
// resourceclaim controller made from the template, named in the pod's
// status.resourceClaimStatuses) must exist, be the pod's own if made from
// a template, and name DeviceClasses that exist. Kubernetes' scheduler
// would then allocate devices from the ResourceSlices DRA drivers
// publish; Tugboat runs no driver and nothing publishes slices, so a claim
// cannot be allocated and the DynamicResources filter refuses every node
// with that reason: the pod stays Pending, PodScheduled=False
// Unschedulable, with a FailedScheduling event "0/N nodes are available:
// N node(s) cannot allocate claim ...". A claim whose status says it is
// allocated (written by hand through UpdateStatus) is refused too: no
// kubelet here can prepare its devices, and running the pod without them
// would drop the claim silently.

type claimCaches struct {
	claims  *informer.Informer[*v1.ResourceClaim]
	classes *informer.Informer[*v1.DeviceClass]
}

func newClaimCaches(c *client.Client, s *Scheduler) *claimCaches {
	cc := &claimCaches{
		claims:  informer.New(client.For[*v1.ResourceClaim](c), informer.Options{Logger: s.log}),
		classes: informer.New(client.For[*v1.DeviceClass](c), informer.Options{Logger: s.log}),
	}
	retry := func() { s.queue.MoveAllToActive(framework.ResourceClaimChanged) }
	cc.claims.AddHandler(informer.Handler[*v1.ResourceClaim]{OnAdd: func(*v1.ResourceClaim) { retry() },
		OnUpdate: func(*v1.ResourceClaim, *v1.ResourceClaim) { retry() }, OnDelete: func(*v1.ResourceClaim) { retry() }})
	cc.classes.AddHandler(informer.Handler[*v1.DeviceClass]{OnAdd: func(*v1.DeviceClass) { retry() },
		OnUpdate: func(*v1.DeviceClass, *v1.DeviceClass) { retry() }})
	return cc
}

// claimsStatus is why the pod's claims keep it off every node, or nil
// for a pod without claims.
func (cc *claimCaches) claimsStatus(pod *v1.Pod) *framework.Status {
	entries := pod.GetSpec().GetResourceClaims()
	if len(entries) == 0 {
		return nil
	}
	ns, podName := pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName()
	made := map[string]*v1.PodResourceClaimStatus{}
	for _, st := range pod.GetStatus().GetResourceClaimStatuses() {
		made[st.GetName()] = st
	}
	for _, e := range entries {
		name, fromTemplate := e.GetResourceClaimName(), e.ResourceClaimName == nil
		if fromTemplate {
			st, ok := made[e.GetName()]
			if !ok {
				// Kubernetes' resourceclaim.Name: ErrClaimNotFound.
				return framework.NewStatus(fmt.Sprintf("pod %q: ResourceClaim not created yet", ns+"/"+podName))
			}
			if st.ResourceClaimName == nil {
				continue // the controller found none is needed
			}
			name = st.GetResourceClaimName()
		}
		claim, ok := cc.claims.Get(ns + "/" + name)
		switch {
		case !ok:
			return framework.NewStatus(fmt.Sprintf("resourceclaim %q not found", name))
		case claim.GetMetadata().GetDeletionTimestamp() != nil:
			return framework.NewStatus(fmt.Sprintf("resourceclaim %q is being deleted", name))
		case fromTemplate && !ownedBy(claim.GetMetadata(), pod.GetMetadata().GetUid()):
			return framework.NewStatus(fmt.Sprintf("ResourceClaim %s was not created for pod %s/%s (pod is not owner)", name, ns, podName))
		}
		for _, r := range claim.GetSpec().GetDevices().GetRequests() {
			classes := []string{r.GetExactly().GetDeviceClassName()}
			if r.GetExactly() == nil {
				classes = classes[:0]
				for _, sub := range r.GetFirstAvailable() {
					classes = append(classes, sub.GetDeviceClassName())
				}
			}
			for _, class := range classes {
				if _, ok := cc.classes.Get(class); !ok {
					return framework.NewStatus(fmt.Sprintf("claim %q, request %s: device class %s does not exist", name, r.GetName(), class))
				}
			}
		}
		if claim.GetStatus().GetAllocation() != nil {
			return framework.NewStatus(fmt.Sprintf("node(s) cannot use allocated claim %q: no kubelet in this cluster can prepare its devices (Tugboat does not implement resource drivers)", name))
		}
		return framework.NewStatus(fmt.Sprintf("node(s) cannot allocate claim %q: no DRA driver publishes devices in this cluster (Tugboat does not implement resource drivers)", name))
	}
	return nil
}

func ownedBy(m *v1.ObjectMeta, uid string) bool {
	for _, o := range m.GetOwnerReferences() {
		if o.GetUid() == uid && o.GetController() {
			return true
		}
	}
	return false
}
