package scheduler

import (
	"context"
	"fmt"
	"slices"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/api/volumebinding"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// Volume binding, the scheduler's part (Kubernetes' VolumeBinding plugin):
// before each decision the pod's PersistentVolumeClaims are looked up in
// the volume caches (volumeInfo), so the VolumeBinding filter can refuse
// nodes; after the decision and before the Bind, each unbound
// WaitForFirstConsumer claim gets the chosen node in its
// volume.kubernetes.io/selected-node annotation (preBindVolumes), which
// the persistent volume controller reads to bind or provision there. The
// kubelet waits for the claim to be bound before it starts the pod. A
// ReadWriteOncePod claim another scheduled pod uses makes the pod
// unschedulable until that pod is gone.

// selectedNodeAnnotation is where the scheduler names a waiting claim's node.
const selectedNodeAnnotation = "volume.kubernetes.io/selected-node"

type volumeCaches struct {
	// pods are the scheduler's pods, for claims a pod may use alone.
	pods *informer.Informer[*v1.Pod]
	pvcs *informer.Informer[*v1.PersistentVolumeClaim]
	pvs  *informer.Informer[*v1.PersistentVolume]
	scs  *informer.Informer[*v1.StorageClass]
}

func newVolumeCaches(c *client.Client, s *Scheduler) *volumeCaches {
	vc := &volumeCaches{
		pods: s.pods,
		pvcs: informer.New(client.For[*v1.PersistentVolumeClaim](c), informer.Options{Logger: s.log}),
		pvs:  informer.New(client.For[*v1.PersistentVolume](c), informer.Options{Logger: s.log}),
		scs:  informer.New(client.For[*v1.StorageClass](c), informer.Options{Logger: s.log}),
	}
	retry := func() { s.queue.MoveAllToActive(framework.VolumeChanged) }
	vc.pvcs.AddHandler(informer.Handler[*v1.PersistentVolumeClaim]{OnAdd: func(*v1.PersistentVolumeClaim) { retry() },
		OnUpdate: func(*v1.PersistentVolumeClaim, *v1.PersistentVolumeClaim) { retry() }})
	vc.pvs.AddHandler(informer.Handler[*v1.PersistentVolume]{OnAdd: func(*v1.PersistentVolume) { retry() },
		OnUpdate: func(*v1.PersistentVolume, *v1.PersistentVolume) { retry() }})
	vc.scs.AddHandler(informer.Handler[*v1.StorageClass]{OnAdd: func(*v1.StorageClass) { retry() }})
	return vc
}

func (vc *volumeCaches) synced() bool {
	return vc.pvcs.HasSynced() && vc.pvs.HasSynced() && vc.scs.HasSynced()
}

// volumeInfo is what the pod's claims ask of a node, or nil for a pod
// without claims.
func (vc *volumeCaches) volumeInfo(pod *v1.Pod) *framework.VolumeInfo {
	var info *framework.VolumeInfo
	ns := pod.GetMetadata().GetNamespace()
	for _, vol := range pod.GetSpec().GetVolumes() {
		src := vol.GetPersistentVolumeClaim()
		if src == nil {
			continue
		}
		if info == nil {
			info = &framework.VolumeInfo{Waiting: map[string][][]labels.NodeSelectorTerm{}}
		}
		key := ns + "/" + src.GetClaimName()
		pvc, ok := vc.pvcs.Get(key)
		switch {
		case !ok:
			info.Unschedulable = framework.NewStatus(fmt.Sprintf("persistentvolumeclaim %q not found", src.GetClaimName()))
			return info
		case pvc.GetMetadata().GetDeletionTimestamp() != nil:
			info.Unschedulable = framework.NewStatus(fmt.Sprintf("persistentvolumeclaim %q is being deleted", src.GetClaimName()))
			return info
		case slices.Contains(pvc.GetSpec().GetAccessModes(), "ReadWriteOncePod") && vc.claimUsedByOther(pod, src.GetClaimName()):
			// Kubernetes' VolumeRestrictions: one pod at a time, on any node.
			info.Unschedulable = framework.NewStatus("node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode")
			return info
		}
		if name := pvc.GetSpec().GetVolumeName(); name != "" {
			pv, ok := vc.pvs.Get(name)
			if !ok {
				info.Unschedulable = framework.NewStatus(fmt.Sprintf("pod has unbound immediate PersistentVolumeClaims (volume %q of claim %q not found)", name, src.GetClaimName()))
				return info
			}
			if terms := nodeTerms(pv); terms != nil {
				info.Bound = append(info.Bound, terms)
			}
			continue
		}
		class := pvc.GetSpec().GetStorageClassName()
		sc, _ := vc.scs.Get(class)
		if class == "" || sc.GetVolumeBindingMode() != "WaitForFirstConsumer" {
			info.Unschedulable = framework.NewStatus("pod has unbound immediate PersistentVolumeClaims")
			return info
		}
		if sc.GetProvisioner() == validation.LocalPathProvisioner {
			info.Waiting[key] = nil // made on whatever node the pod gets
			continue
		}
		var candidates [][]labels.NodeSelectorTerm
		for _, pv := range vc.pvs.List() {
			if volumebinding.Candidate(pvc, pv) {
				candidates = append(candidates, nodeTerms(pv))
			}
		}
		if len(candidates) == 0 {
			info.Unschedulable = framework.NewStatus("node(s) didn't find available persistent volumes to bind")
			return info
		}
		info.Waiting[key] = candidates
	}
	return info
}

// claimUsedByOther reports whether another scheduled pod that has not
// finished uses the claim (of pod's namespace).
func (vc *volumeCaches) claimUsedByOther(pod *v1.Pod, claim string) bool {
	ns, uid := pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetUid()
	for _, p := range vc.pods.List() {
		ph := p.GetStatus().GetPhase()
		if p.GetMetadata().GetNamespace() != ns || p.GetMetadata().GetUid() == uid || p.GetSpec().GetNodeName() == "" || ph == "Succeeded" || ph == "Failed" {
			continue
		}
		for _, v := range p.GetSpec().GetVolumes() {
			if v.GetPersistentVolumeClaim().GetClaimName() == claim {
				return true
			}
		}
	}
	return false
}

// nodeTerms is a volume's compiled node affinity, nil for none (any node;
// a volume whose affinity cannot be read fits no node).
func nodeTerms(pv *v1.PersistentVolume) []labels.NodeSelectorTerm {
	req := pv.GetSpec().GetNodeAffinity().GetRequired()
	if req == nil {
		return nil
	}
	terms, err := labels.CompileNodeSelector(req, "spec.nodeAffinity.required")
	if err != nil {
		return []labels.NodeSelectorTerm{}
	}
	return terms
}

// preBindVolumes names node on each waiting claim of the pod, before its Bind.
func (s *Scheduler) preBindVolumes(ctx context.Context, info *framework.VolumeInfo, node string) error {
	if info == nil {
		return nil
	}
	api := client.For[*v1.PersistentVolumeClaim](s.client)
	for key := range info.Waiting {
		ns, name, _ := cutKey(key)
		_, err := api.Mutate(ctx, ns, name, false, func(c *v1.PersistentVolumeClaim) error {
			if c.GetSpec().GetVolumeName() != "" {
				return nil
			}
			if c.Metadata.Annotations == nil {
				c.Metadata.Annotations = map[string]string{}
			}
			c.Metadata.Annotations[selectedNodeAnnotation] = node
			return nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("naming node %s on claim %s: %w", node, key, err)
		}
	}
	return nil
}

func cutKey(key string) (ns, name string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}
