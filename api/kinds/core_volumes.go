// The core group's volume kinds (v1): PersistentVolume and
// PersistentVolumeClaim, and their defaults.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var coreVolumeKinds = []*Kind{
	{Name: "PersistentVolume", Plural: "persistentvolumes", Short: []string{"pv"}, APIVersion: "v1",
		New: func() v1.Object { return &v1.PersistentVolume{} }, Default: typedDefault(defaultPV), Validate: typed(validation.PersistentVolume),
		ValidateUpdate: typedUpdate(validation.PersistentVolumeUpdate)},
	{Name: "PersistentVolumeClaim", Plural: "persistentvolumeclaims", Short: []string{"pvc"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.PersistentVolumeClaim{} }, Default: typedDefault(defaultPVC), Validate: typed(validation.PersistentVolumeClaim),
		ValidateUpdate: typedUpdate(validation.PersistentVolumeClaimUpdate)},
}

func defaultPV(pv *v1.PersistentVolume) {
	s := pv.Spec
	if s == nil {
		return
	}
	if s.PersistentVolumeReclaimPolicy == "" {
		s.PersistentVolumeReclaimPolicy = "Retain"
	}
	if s.VolumeMode == "" {
		s.VolumeMode = "Filesystem"
	}
	if pv.Status == nil {
		pv.Status = &v1.PersistentVolumeStatus{}
	}
	if pv.Status.Phase == "" {
		pv.Status.Phase = "Pending"
	}
}

func defaultPVC(c *v1.PersistentVolumeClaim) {
	if c.Spec != nil && c.Spec.VolumeMode == "" {
		c.Spec.VolumeMode = "Filesystem"
	}
	if c.Status == nil {
		c.Status = &v1.PersistentVolumeClaimStatus{}
	}
	if c.Status.Phase == "" {
		c.Status.Phase = "Pending"
	}
}
