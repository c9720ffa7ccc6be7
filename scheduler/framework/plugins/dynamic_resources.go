package plugins

import "github.com/tugboat/tugboat/scheduler/framework"

// DynamicResources refuses every node to a pod whose ResourceClaims
// cannot be used (Kubernetes' DynamicResources plugin, the part that
// holds without drivers): a claim missing or being deleted, a
// template-based claim not made yet, a claim nothing allocated. What was
// wrong is worked out per decision from the claim cache
// (scheduler/dynamicresources.go) into PodInfo.Claims; Tugboat runs no
// DRA driver and publishes no ResourceSlices, so it never allocates.
type DynamicResources struct{}

func (DynamicResources) Name() string { return "DynamicResources" }

// Events: a claim or class appearing or changing.
func (DynamicResources) Events() framework.ClusterEvent { return framework.ResourceClaimChanged }

func (DynamicResources) Filter(pi *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	return pi.Claims
}
