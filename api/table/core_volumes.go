package table

import (
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// coreVolumes is the tables of the core group's volume kinds, and storage
// is the storage.k8s.io group's.
var (
	coreVolumes = map[string]def{
		"PersistentVolume":      kindDef(pvColumns, pvCells),
		"PersistentVolumeClaim": kindDef(pvcColumns, pvcCells),
	}
	storage = map[string]def{
		"StorageClass": kindDef(storageClassColumns, storageClassCells),
	}
)

// AccessModes is kubectl's short form: "RWO,ROX".
func AccessModes(modes []string) string {
	short := map[string]string{"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
	var out []string
	for _, m := range modes {
		if s, ok := short[m]; ok {
			out = append(out, s)
		}
	}
	return strings.Join(out, ",")
}

var pvColumns = []Column{
	nameColumn,
	{Name: "Capacity", Type: "string", Description: "The volume's size."},
	{Name: "Access Modes", Type: "string", Description: "RWO, ROX, RWX, RWOP."},
	{Name: "Reclaim Policy", Type: "string", Description: "What happens to the volume when its claim goes."},
	{Name: "Status", Type: "string", Description: "Available, Bound, Released or Failed."},
	{Name: "Claim", Type: "string", Description: "The claim bound to it (namespace/name)."},
	{Name: "StorageClass", Type: "string", Description: "Its class."},
	{Name: "Reason", Type: "string", Description: "Why it is in its phase."},
	ageColumn,
}

func pvCells(pv *v1.PersistentVolume, now time.Time) []any {
	sp := pv.GetSpec()
	claim := ""
	if r := sp.GetClaimRef(); r != nil {
		claim = r.GetNamespace() + "/" + r.GetName()
	}
	return []any{pv.Metadata.GetName(), sp.GetCapacity()["storage"], AccessModes(sp.GetAccessModes()), sp.GetPersistentVolumeReclaimPolicy(),
		pv.GetStatus().GetPhase(), claim, sp.GetStorageClassName(), pv.GetStatus().GetReason(), Age(pv.Metadata.GetCreationTimestamp(), now)}
}

var pvcColumns = []Column{
	nameColumn,
	{Name: "Status", Type: "string", Description: "Pending, Bound or Lost."},
	{Name: "Volume", Type: "string", Description: "The volume bound to it."},
	{Name: "Capacity", Type: "string", Description: "The bound volume's size."},
	{Name: "Access Modes", Type: "string", Description: "RWO, ROX, RWX, RWOP."},
	{Name: "StorageClass", Type: "string", Description: "Its class."},
	ageColumn,
}

func pvcCells(c *v1.PersistentVolumeClaim, now time.Time) []any {
	st := c.GetStatus()
	return []any{c.Metadata.GetName(), st.GetPhase(), c.GetSpec().GetVolumeName(), st.GetCapacity()["storage"], AccessModes(st.GetAccessModes()),
		c.GetSpec().GetStorageClassName(), Age(c.Metadata.GetCreationTimestamp(), now)}
}

var storageClassColumns = []Column{
	nameColumn,
	{Name: "Provisioner", Type: "string", Description: "Who makes its volumes."},
	{Name: "ReclaimPolicy", Type: "string", Description: "Delete or Retain, for the volumes it makes."},
	{Name: "VolumeBindingMode", Type: "string", Description: "Immediate or WaitForFirstConsumer."},
	{Name: "AllowVolumeExpansion", Type: "string", Description: "Whether claims may grow."},
	ageColumn,
}

func storageClassCells(c *v1.StorageClass, now time.Time) []any {
	name := c.Metadata.GetName()
	if c.Metadata.GetAnnotations()["storageclass.kubernetes.io/is-default-class"] == "true" {
		name += " (default)"
	}
	exp := "false"
	if c.GetAllowVolumeExpansion() {
		exp = "true"
	}
	return []any{name, c.GetProvisioner(), c.GetReclaimPolicy(), c.GetVolumeBindingMode(), exp, Age(c.Metadata.GetCreationTimestamp(), now)}
}
