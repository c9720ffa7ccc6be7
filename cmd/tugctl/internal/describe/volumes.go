package describe

import (
	"context"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// describePV is kubectl's PersistentVolume description.
func describePV(ctx context.Context, d *describer, pv *v1.PersistentVolume) error {
	sp, st := pv.GetSpec(), pv.GetStatus()
	d.meta(pv.GetMetadata(), false)
	d.kv(0, "StorageClass", sp.GetStorageClassName())
	d.kv(0, "Status", st.GetPhase())
	claim := ""
	if r := sp.GetClaimRef(); r != nil {
		claim = r.GetNamespace() + "/" + r.GetName()
	}
	d.kv(0, "Claim", claim)
	d.kv(0, "Reclaim Policy", sp.GetPersistentVolumeReclaimPolicy())
	d.kv(0, "Access Modes", table.AccessModes(sp.GetAccessModes()))
	d.kv(0, "VolumeMode", orDefault(sp.GetVolumeMode(), "Filesystem"))
	d.kv(0, "Capacity", sp.GetCapacity()["storage"])
	if terms := sp.GetNodeAffinity().GetRequired().GetNodeSelectorTerms(); len(terms) > 0 {
		d.text(0, "Node Affinity:")
		d.text(1, "Required Terms:")
		for i, t := range terms {
			var reqs []string
			for _, r := range append(t.GetMatchExpressions(), t.GetMatchFields()...) {
				reqs = append(reqs, fmt.Sprintf("%s %s [%s]", r.GetKey(), strings.ToLower(r.GetOperator()), strings.Join(r.GetValues(), ", ")))
			}
			d.kv(2, fmt.Sprintf("Term %d", i), strings.Join(reqs, ", "))
		}
	} else {
		d.kv(0, "Node Affinity", "<none>")
	}
	d.kv(0, "Message", st.GetMessage())
	d.text(0, "Source:")
	switch {
	case sp.GetLocal() != nil:
		d.kv(1, "Type", "LocalVolume (a persistent volume backed by local storage on a node)")
		d.kv(1, "Path", sp.GetLocal().GetPath())
	case sp.GetHostPath() != nil:
		d.kv(1, "Type", "HostPath (bare host directory volume)")
		d.kv(1, "Path", sp.GetHostPath().GetPath())
		d.kv(1, "HostPathType", sp.GetHostPath().GetType())
	}
	return d.events(ctx, pv)
}

// describePVC is kubectl's PersistentVolumeClaim description, with the
// pods that use the claim.
func describePVC(ctx context.Context, d *describer, pvc *v1.PersistentVolumeClaim) error {
	sp, st := pvc.GetSpec(), pvc.GetStatus()
	d.meta(pvc.GetMetadata(), true)
	d.kv(0, "StorageClass", sp.GetStorageClassName())
	d.kv(0, "Status", st.GetPhase())
	d.kv(0, "Volume", sp.GetVolumeName())
	d.kv(0, "Capacity", st.GetCapacity()["storage"])
	d.kv(0, "Access Modes", table.AccessModes(st.GetAccessModes()))
	d.kv(0, "VolumeMode", orDefault(sp.GetVolumeMode(), "Filesystem"))
	if d.c != nil {
		pods, _, err := client.For[*v1.Pod](d.c).List(ctx, client.ListOptions{Namespace: pvc.GetMetadata().GetNamespace()})
		if err != nil {
			return err
		}
		var users []string
		for _, p := range pods {
			for _, v := range p.GetSpec().GetVolumes() {
				if v.GetPersistentVolumeClaim().GetClaimName() == pvc.GetMetadata().GetName() {
					users = append(users, p.GetMetadata().GetName())
					break
				}
			}
		}
		d.kv(0, "Used By", table.OrNone(strings.Join(users, ", ")))
	}
	d.conditions(st.GetConditions(), true)
	return d.events(ctx, pvc)
}

// describeStorageClass is kubectl's StorageClass description.
func describeStorageClass(ctx context.Context, d *describer, sc *v1.StorageClass) error {
	d.meta(sc.GetMetadata(), false)
	def := "No"
	if sc.GetMetadata().GetAnnotations()["storageclass.kubernetes.io/is-default-class"] == "true" {
		def = "Yes"
	}
	d.kv(0, "IsDefaultClass", def)
	d.kv(0, "Provisioner", sc.GetProvisioner())
	d.kv(0, "ReclaimPolicy", sc.GetReclaimPolicy())
	d.kv(0, "VolumeBindingMode", sc.GetVolumeBindingMode())
	return d.events(ctx, sc)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
