package volume

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/api/volumebinding"
	"github.com/tugboat/tugboat/controllers/controller"
)

func (c *Controller) syncClaim(ctx context.Context, key string) error {
	pvc, ok := c.pvcs.Get(key)
	if !ok || pvc.GetMetadata().GetDeletionTimestamp() != nil {
		return nil
	}
	if name := pvc.GetSpec().GetVolumeName(); name != "" {
		return c.syncClaimWithVolume(ctx, pvc, name)
	}
	class := pvc.GetSpec().GetStorageClassName()
	var sc *v1.StorageClass
	if class != "" {
		if sc, ok = c.scs.Get(class); !ok {
			c.events.Eventf(pvc, controller.Warning, "ProvisioningFailed", "storageclass.storage.k8s.io %q not found", class)
			return c.claimStatus(ctx, pvc, "Pending", nil)
		}
	}
	delay := sc.GetVolumeBindingMode() == "WaitForFirstConsumer"
	nodeName := pvc.GetMetadata().GetAnnotations()[SelectedNodeAnnotation]
	if delay && nodeName == "" {
		// Only a volume reserved for the claim binds before its node is known.
		if pv := volumebinding.FindBestMatch(pvc, c.pvs.List(), true); pv != nil {
			return c.bind(ctx, pv, pvc)
		}
		reason, msg := c.waitingForConsumer(pvc)
		c.events.Eventf(pvc, controller.Normal, reason, "%s", msg)
		return c.claimStatus(ctx, pvc, "Pending", nil)
	}
	var pv *v1.PersistentVolume
	if nodeName != "" {
		node, err := c.node(ctx, nodeName)
		if err != nil {
			return err
		}
		if node == nil {
			return c.selectedNodeGone(ctx, pvc, nodeName)
		}
		pv = volumebinding.FindMatchingVolume(pvc, c.pvs.List(), node, delay)
	} else {
		pv = volumebinding.FindBestMatch(pvc, c.pvs.List(), delay)
	}
	if pv != nil {
		return c.bind(ctx, pv, pvc)
	}
	switch {
	case class == "":
		c.events.Eventf(pvc, controller.Normal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
	case sc.GetProvisioner() == validation.LocalPathProvisioner && nodeName != "":
		pv, err := c.provision(ctx, pvc, sc, nodeName)
		if err != nil {
			c.events.Eventf(pvc, controller.Warning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v", class, err)
			return err
		}
		return c.bind(ctx, pv, pvc)
	default:
		// kubernetes.io/no-provisioner: volumes are made by hand.
		c.events.Eventf(pvc, controller.Warning, "ProvisioningFailed", "no volume plugin matched name: %s", sc.GetProvisioner())
	}
	return c.claimStatus(ctx, pvc, "Pending", nil)
}

// syncClaimWithVolume follows a claim whose spec.volumeName is set: by
// the binder (phase Bound: the bind is complete, and the claim is Lost if
// its volume goes or is given to another claim) or by the user asking for
// that volume (bound once the volume is free and satisfies the claim, as
// Kubernetes checks it; Pending otherwise, with the reason in an Event).
func (c *Controller) syncClaimWithVolume(ctx context.Context, pvc *v1.PersistentVolumeClaim, name string) error {
	pv, ok := c.pvs.Get(name)
	bound := pvc.GetStatus().GetPhase() == "Bound" || pvc.GetStatus().GetPhase() == "Lost"
	r := pv.GetSpec().GetClaimRef()
	switch {
	case !ok && bound:
		return c.claimStatus(ctx, pvc, "Lost", nil)
	case !ok:
		return c.claimStatus(ctx, pvc, "Pending", nil) // the volume may be made later
	case volumebinding.ReservedFor(pv, pvc) && r.GetUid() != "":
		if !bound {
			return c.bind(ctx, pv, pvc)
		}
		return c.claimStatus(ctx, pvc, "Bound", pv)
	case r != nil && !volumebinding.ReservedFor(pv, pvc):
		if bound {
			return c.claimStatus(ctx, pvc, "Lost", nil)
		}
		return c.claimStatus(ctx, pvc, "Pending", nil) // the volume may be freed
	}
	// Unclaimed, or reserved for this claim by name: the claim must fit.
	if err := volumebinding.CheckVolumeSatisfyClaim(pv, pvc); err != nil {
		c.events.Eventf(pvc, controller.Warning, "FailedBinding", "Cannot bind to requested volume %q: %v", name, err)
		return c.claimStatus(ctx, pvc, "Pending", nil)
	}
	return c.bind(ctx, pv, pvc)
}

// waitingForConsumer is Kubernetes' event for a WaitForFirstConsumer
// claim without a node: the pods that use it and wait to be scheduled, or
// that no pod uses it yet.
func (c *Controller) waitingForConsumer(pvc *v1.PersistentVolumeClaim) (reason, msg string) {
	var names []string
	for _, p := range c.pods.List() {
		if p.GetMetadata().GetNamespace() != pvc.GetMetadata().GetNamespace() || p.GetSpec().GetNodeName() != "" {
			continue
		}
		for _, v := range p.GetSpec().GetVolumes() {
			if v.GetPersistentVolumeClaim().GetClaimName() == pvc.GetMetadata().GetName() {
				names = append(names, p.GetMetadata().GetName())
				break
			}
		}
	}
	switch len(names) {
	case 0:
		return "WaitForFirstConsumer", "waiting for first consumer to be created before binding"
	case 1:
		return "WaitForPodScheduled", fmt.Sprintf("waiting for pod %s to be scheduled", names[0])
	}
	slices.Sort(names)
	return "WaitForPodScheduled", fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(names, ","))
}

// provision makes a local-path volume for the claim on node.
func (c *Controller) provision(ctx context.Context, pvc *v1.PersistentVolumeClaim, sc *v1.StorageClass, node string) (*v1.PersistentVolume, error) {
	m := pvc.GetMetadata()
	name := "pvc-" + m.GetUid()
	pv := &v1.PersistentVolume{
		Metadata: &v1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": validation.LocalPathProvisioner}},
		Spec: &v1.PersistentVolumeSpec{
			Capacity:                      map[string]string{"storage": pvc.GetSpec().GetResources().GetRequests()["storage"]},
			AccessModes:                   pvc.GetSpec().GetAccessModes(),
			PersistentVolumeReclaimPolicy: sc.GetReclaimPolicy(),
			StorageClassName:              sc.GetMetadata().GetName(),
			Local:                         &v1.LocalVolumeSource{Path: c.cfg.LocalPathDir + "/" + name},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{{
				MatchFields: []*v1.LabelSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{node}}}}}}},
			ClaimRef: claimRef(pvc),
		},
	}
	out, err := c.pvAPI.Create(ctx, pv)
	if apierrors.IsAlreadyExists(err) {
		return c.pvAPI.Get(ctx, "", name)
	}
	if err != nil {
		return nil, err
	}
	c.events.Eventf(pvc, controller.Normal, "ProvisioningSucceeded", "Successfully provisioned volume %s on node %s", name, node)
	c.log.Info("provisioned local-path volume", "claim", v1.Key(pvc), "volume", name, "node", node, "path", pv.Spec.Local.Path)
	return out, nil
}

func claimRef(pvc *v1.PersistentVolumeClaim) *v1.ObjectReference {
	m := pvc.GetMetadata()
	return &v1.ObjectReference{Kind: "PersistentVolumeClaim", ApiVersion: "v1", Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid()}
}

// claimVolume writes the volume's claimRef (compare-and-swap: a volume
// another claim took first is not taken).
func (c *Controller) claimVolume(ctx context.Context, pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) (*v1.PersistentVolume, error) {
	return c.pvAPI.Mutate(ctx, "", pv.GetMetadata().GetName(), false, func(cur *v1.PersistentVolume) error {
		if r := cur.GetSpec().GetClaimRef(); r != nil && r.GetUid() != "" && r.GetUid() != pvc.GetMetadata().GetUid() {
			return fmt.Errorf("volume %s was bound to %s/%s meanwhile", pv.GetMetadata().GetName(), r.GetNamespace(), r.GetName())
		}
		cur.Spec.ClaimRef = claimRef(pvc)
		return nil
	})
}

// bind ties a volume and a claim: the volume's side first.
func (c *Controller) bind(ctx context.Context, pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) error {
	pv, err := c.claimVolume(ctx, pv, pvc)
	if err != nil {
		return err
	}
	if err := c.volumeStatus(ctx, pv, "Bound"); err != nil {
		return err
	}
	pvc, err = c.pvcAPI.Mutate(ctx, pvc.GetMetadata().GetNamespace(), pvc.GetMetadata().GetName(), false, func(cur *v1.PersistentVolumeClaim) error {
		if cur.GetMetadata().GetUid() != pvc.GetMetadata().GetUid() {
			return apierrors.New(apierrors.ErrNotFound, "claim was replaced")
		}
		cur.Spec.VolumeName = pv.GetMetadata().GetName()
		return nil
	})
	if err != nil {
		return err
	}
	return c.claimStatus(ctx, pvc, "Bound", pv)
}

func (c *Controller) claimStatus(ctx context.Context, pvc *v1.PersistentVolumeClaim, phase string, pv *v1.PersistentVolume) error {
	st := &v1.PersistentVolumeClaimStatus{Phase: phase, Conditions: pvc.GetStatus().GetConditions()}
	if pv != nil {
		st.AccessModes, st.Capacity = pv.GetSpec().GetAccessModes(), pv.GetSpec().GetCapacity()
	}
	if proto.Equal(pvc.GetStatus(), st) {
		return nil
	}
	next := proto.Clone(pvc).(*v1.PersistentVolumeClaim)
	next.Status = st
	_, err := c.pvcAPI.UpdateStatus(ctx, next)
	return err
}

func (c *Controller) volumeStatus(ctx context.Context, pv *v1.PersistentVolume, phase string) error {
	if pv.GetStatus().GetPhase() == phase {
		return nil
	}
	next := proto.Clone(pv).(*v1.PersistentVolume)
	next.Status = &v1.PersistentVolumeStatus{Phase: phase}
	_, err := c.pvAPI.UpdateStatus(ctx, next)
	return err
}

// syncVolume keeps a volume's phase: Available without claim, Bound, or
// Released once its claim is gone (then deleted if its policy is Delete).
func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, ok := c.pvs.Get(name)
	if !ok || pv.GetMetadata().GetDeletionTimestamp() != nil {
		return nil
	}
	if st := pv.GetStatus(); st.GetPhase() == "Failed" && st.GetReason() != NodeNotFoundReason {
		return nil // for an admin to look at
	}
	r := pv.GetSpec().GetClaimRef()
	if r == nil {
		return c.volumeStatus(ctx, pv, "Available")
	}
	pvc, ok := c.pvcs.Get(r.GetNamespace() + "/" + r.GetName())
	if ok && (r.GetUid() == "" || pvc.GetMetadata().GetUid() == r.GetUid()) {
		if pvc.GetSpec().GetVolumeName() == name {
			return c.volumeStatus(ctx, pv, "Bound")
		}
		return nil // being bound
	}
	if r.GetUid() == "" {
		return nil // reserved for a claim not made yet
	}
	// The claim may only be missing from a lagging cache: ask.
	if cur, err := c.pvcAPI.Get(ctx, r.GetNamespace(), r.GetName()); err == nil && cur.GetMetadata().GetUid() == r.GetUid() {
		return nil
	}
	if pv.GetSpec().GetPersistentVolumeReclaimPolicy() == "Delete" {
		if isLocalPath(pv) {
			return c.deleteLocalPath(ctx, pv)
		}
		_, err := c.pvAPI.Delete(ctx, "", name, client.DeleteOptions{ResourceVersion: pv.GetMetadata().GetResourceVersion()})
		if err == nil {
			c.events.Eventf(pv, controller.Normal, "VolumeDelete", "deleted volume %s: its claim %s/%s is gone (reclaim policy Delete)", name, r.GetNamespace(), r.GetName())
		}
		return ignoreNotFound(err)
	}
	return c.volumeStatus(ctx, pv, "Released")
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
