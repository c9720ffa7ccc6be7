package volume

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/controllers/controller"
)

func (c *Controller) syncClaim(ctx context.Context, key string) error {
	pvc, ok := c.pvcs.Get(key)
	if !ok || pvc.GetMetadata().GetDeletionTimestamp() != nil {
		return nil
	}
	if name := pvc.GetSpec().GetVolumeName(); name != "" {
		pv, ok := c.pvs.Get(name)
		if !ok {
			return c.claimStatus(ctx, pvc, "Lost", nil)
		}
		if r := pv.GetSpec().GetClaimRef(); r == nil || r.GetUid() != pvc.GetMetadata().GetUid() {
			if r != nil && r.GetUid() != "" {
				return c.claimStatus(ctx, pvc, "Lost", nil)
			}
			if _, err := c.claimVolume(ctx, pv, pvc); err != nil {
				return err
			}
		}
		return c.claimStatus(ctx, pvc, "Bound", pv)
	}
	class := pvc.GetSpec().GetStorageClassName()
	var sc *v1.StorageClass
	if class != "" {
		if sc, ok = c.scs.Get(class); !ok {
			c.events.Eventf(pvc, controller.Warning, "ProvisioningFailed", "storageclass.storage.k8s.io %q not found", class)
			return nil
		}
	}
	node := pvc.GetMetadata().GetAnnotations()[SelectedNodeAnnotation]
	if sc.GetVolumeBindingMode() == "WaitForFirstConsumer" && node == "" {
		c.events.Eventf(pvc, controller.Normal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
		return nil
	}
	if pv := c.findVolume(pvc, node); pv != nil {
		return c.bind(ctx, pv, pvc)
	}
	if sc.GetProvisioner() != validation.LocalPathProvisioner || node == "" {
		c.events.Eventf(pvc, controller.Normal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
		return nil
	}
	pv, err := c.provision(ctx, pvc, sc, node)
	if err != nil {
		c.events.Eventf(pvc, controller.Warning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v", class, err)
		return err
	}
	return c.bind(ctx, pv, pvc)
}

// findVolume is the smallest Available volume that fits the claim (and
// node, if one was selected), or one already reserved for it.
func (c *Controller) findVolume(pvc *v1.PersistentVolumeClaim, node string) *v1.PersistentVolume {
	want := quantity(pvc.GetSpec().GetResources().GetRequests()["storage"])
	var best *v1.PersistentVolume
	var bestSize int64
	for _, pv := range c.pvs.List() {
		if !Fits(pv, pvc, node) {
			continue
		}
		if r := pv.GetSpec().GetClaimRef(); r != nil && r.GetUid() == pvc.GetMetadata().GetUid() {
			return pv
		}
		size := quantity(pv.GetSpec().GetCapacity()["storage"])
		if size >= want && (best == nil || size < bestSize) {
			best, bestSize = pv, size
		}
	}
	return best
}

// Fits reports whether a volume can serve a claim (on node, if not empty):
// unclaimed or reserved for it, same class, large enough, the access
// modes, the selector and the node affinity.
func Fits(pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim, node string) bool {
	s, cs := pv.GetSpec(), pvc.GetSpec()
	if pv.GetMetadata().GetDeletionTimestamp() != nil || pv.GetStatus().GetPhase() == "Released" || pv.GetStatus().GetPhase() == "Failed" {
		return false
	}
	if r := s.GetClaimRef(); r != nil && !(r.GetNamespace() == pvc.GetMetadata().GetNamespace() && r.GetName() == pvc.GetMetadata().GetName() &&
		(r.GetUid() == "" || r.GetUid() == pvc.GetMetadata().GetUid())) {
		return false
	}
	if s.GetStorageClassName() != cs.GetStorageClassName() {
		return false
	}
	if quantity(s.GetCapacity()["storage"]) < quantity(cs.GetResources().GetRequests()["storage"]) {
		return false
	}
	for _, m := range cs.GetAccessModes() {
		if !slices.Contains(s.GetAccessModes(), m) {
			return false
		}
	}
	if cs.GetSelector() != nil {
		sel, err := labels.FromLabelSelector(cs.GetSelector())
		if err != nil || !sel.Matches(pv.GetMetadata().GetLabels()) {
			return false
		}
	}
	if node != "" {
		return NodeAllowed(pv, node, nil)
	}
	return true
}

// NodeAllowed reports whether a volume's node affinity admits the node
// (of these labels; nil: matchFields only).
func NodeAllowed(pv *v1.PersistentVolume, node string, nodeLabels map[string]string) bool {
	req := pv.GetSpec().GetNodeAffinity().GetRequired()
	if req == nil {
		return true
	}
	terms, err := labels.CompileNodeSelector(req, "spec.nodeAffinity.required")
	return err == nil && labels.NodeSelectorMatches(terms, nodeLabels, node)
}

func quantity(s string) int64 {
	q, err := resource.Parse(s)
	if err != nil {
		return 0
	}
	return q.Value()
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
	if !ok || pv.GetMetadata().GetDeletionTimestamp() != nil || pv.GetStatus().GetPhase() == "Failed" {
		return nil
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
