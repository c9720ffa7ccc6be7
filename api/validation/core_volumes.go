// The core group's volume kinds (v1): PersistentVolume and
// PersistentVolumeClaim; and the storage group (storage.k8s.io/v1):
// StorageClass.

package validation

import (
	"fmt"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The built-in provisioner and the one that means "volumes made by hand".
const (
	LocalPathProvisioner = "tugboat.io/local-path"
	NoProvisioner        = "kubernetes.io/no-provisioner"
)

// DefaultStorageClassAnnotation marks the class a claim without
// storageClassName gets.
const DefaultStorageClassAnnotation = "storageclass.kubernetes.io/is-default-class"

func accessModes(errs *Errs, path string, modes []string) {
	if len(modes) == 0 {
		errs.Add(path, "at least 1 access mode is required")
	}
	for i, m := range modes {
		OneOf(errs, fmt.Sprintf("%s[%d]", path, i), m, "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
	}
}

func storageQuantity(errs *Errs, path, v string) {
	if v == "" {
		errs.Add(path, "required")
		return
	}
	q, err := resource.Parse(v)
	if err != nil {
		errs.Add(path, "%v", err)
	} else if q.Value() <= 0 {
		errs.Add(path, "must be greater than zero")
	}
}

// PersistentVolume validates a volume.
func PersistentVolume(pv *v1.PersistentVolume) Errs {
	var errs Errs
	ObjectMeta(&errs, pv.Metadata, false, DNSSubdomain)
	s := pv.Spec
	if s == nil {
		errs.Add("spec", "required")
		return errs
	}
	storageQuantity(&errs, "spec.capacity.storage", s.Capacity["storage"])
	for k := range s.Capacity {
		if k != "storage" {
			errs.Add("spec.capacity."+k, "unknown resource (only storage)")
		}
	}
	accessModes(&errs, "spec.accessModes", s.AccessModes)
	OneOf(&errs, "spec.persistentVolumeReclaimPolicy", s.PersistentVolumeReclaimPolicy, "Retain", "Delete")
	OneOf(&errs, "spec.volumeMode", s.VolumeMode, "Filesystem")
	if s.StorageClassName != "" {
		DNSSubdomain(&errs, "spec.storageClassName", s.StorageClassName)
	}
	n := 0
	if s.HostPath != nil {
		n++
		if !filepath.IsAbs(s.HostPath.Path) {
			errs.Add("spec.hostPath.path", "must be an absolute path")
		}
	}
	if s.Local != nil {
		n++
		if !filepath.IsAbs(s.Local.Path) {
			errs.Add("spec.local.path", "must be an absolute path")
		}
		if s.NodeAffinity.GetRequired() == nil {
			errs.Add("spec.nodeAffinity", "required for a local volume")
		}
	}
	if n != 1 {
		errs.Add("spec", "exactly one of hostPath or local must be set (found %d)", n)
	}
	if req := s.NodeAffinity.GetRequired(); req != nil {
		if _, err := labels.CompileNodeSelector(req, "spec.nodeAffinity.required"); err != nil {
			errs.Add("spec.nodeAffinity.required", "%v", err)
		}
	}
	if r := s.ClaimRef; r != nil && (r.Name == "" || r.Namespace == "") {
		errs.Add("spec.claimRef", "name and namespace are required")
	}
	return errs
}

// PersistentVolumeUpdate keeps a volume's source and node affinity fixed.
func PersistentVolumeUpdate(old, new *v1.PersistentVolume) Errs {
	var errs Errs
	o, n := old.GetSpec(), new.GetSpec()
	if !proto.Equal(o.GetHostPath(), n.GetHostPath()) || !proto.Equal(o.GetLocal(), n.GetLocal()) {
		errs.Add("spec", "the volume source is immutable")
	}
	if !proto.Equal(o.GetNodeAffinity(), n.GetNodeAffinity()) {
		errs.Add("spec.nodeAffinity", "field is immutable")
	}
	if o.GetStorageClassName() != n.GetStorageClassName() {
		errs.Add("spec.storageClassName", "field is immutable")
	}
	return errs
}

// PersistentVolumeClaim validates a claim (that its class exists is
// checked by the apiserver's admission, which also fills the default).
func PersistentVolumeClaim(c *v1.PersistentVolumeClaim) Errs {
	var errs Errs
	ObjectMeta(&errs, c.Metadata, true, DNSSubdomain)
	s := c.Spec
	if s == nil {
		errs.Add("spec", "required")
		return errs
	}
	accessModes(&errs, "spec.accessModes", s.AccessModes)
	storageQuantity(&errs, "spec.resources.requests.storage", s.GetResources().GetRequests()["storage"])
	OneOf(&errs, "spec.volumeMode", s.VolumeMode, "Filesystem")
	if sc := s.StorageClassName; sc != nil && *sc != "" {
		DNSSubdomain(&errs, "spec.storageClassName", *sc)
	}
	if s.Selector != nil {
		if _, err := labels.FromLabelSelector(s.Selector); err != nil {
			errs.Add("spec.selector", "%v", err)
		}
	}
	return errs
}

// PersistentVolumeClaimUpdate keeps a claim's spec fixed once made, but
// for volumeName, which the binder sets once, and a larger request (which
// Tugboat refuses: no volume expansion yet).
func PersistentVolumeClaimUpdate(old, new *v1.PersistentVolumeClaim) Errs {
	var errs Errs
	o, n := proto.Clone(old.GetSpec()).(*v1.PersistentVolumeClaimSpec), proto.Clone(new.GetSpec()).(*v1.PersistentVolumeClaimSpec)
	if o.GetVolumeName() != "" && n.GetVolumeName() != o.GetVolumeName() {
		errs.Add("spec.volumeName", "cannot change once bound (bound to %q)", o.GetVolumeName())
	}
	o.VolumeName, n.VolumeName = "", ""
	if !proto.Equal(o.GetResources(), n.GetResources()) {
		errs.Add("spec.resources.requests.storage", "volume expansion is not supported")
	}
	o.Resources, n.Resources = nil, nil
	if !proto.Equal(o, n) {
		errs.Add("spec", "is immutable after creation except resources.requests and volumeName")
	}
	return errs
}

// StorageClass validates a class. The built-in local-path provisioner
// needs WaitForFirstConsumer (it makes the directory on the node the
// scheduler picks), and only serves ReadWriteOnce claims (checked on the
// claims).
func StorageClass(c *v1.StorageClass) Errs {
	var errs Errs
	ObjectMeta(&errs, c.Metadata, false, DNSSubdomain)
	if c.Provisioner == "" {
		errs.Add("provisioner", "required")
	} else if c.Provisioner != LocalPathProvisioner && c.Provisioner != NoProvisioner {
		errs.Add("provisioner", "%q is not served: use %s (built in) or %s (volumes made by hand)", c.Provisioner, LocalPathProvisioner, NoProvisioner)
	}
	OneOf(&errs, "reclaimPolicy", c.GetReclaimPolicy(), "Delete", "Retain")
	OneOf(&errs, "volumeBindingMode", c.GetVolumeBindingMode(), "Immediate", "WaitForFirstConsumer")
	if c.Provisioner == LocalPathProvisioner && c.GetVolumeBindingMode() != "WaitForFirstConsumer" {
		errs.Add("volumeBindingMode", "%s needs WaitForFirstConsumer: a local volume is made on the node the pod is scheduled to", LocalPathProvisioner)
	}
	if c.AllowVolumeExpansion {
		errs.Add("allowVolumeExpansion", "volume expansion is not supported")
	}
	if len(c.MountOptions) > 0 {
		errs.Add("mountOptions", "not supported: local volumes are bind mounts")
	}
	for k := range c.Parameters {
		errs.Add("parameters."+k, "unknown parameter: %s and %s take none", LocalPathProvisioner, NoProvisioner)
	}
	return errs
}

// StorageClassUpdate keeps what Kubernetes keeps fixed: all but metadata.
func StorageClassUpdate(old, new *v1.StorageClass) Errs {
	var errs Errs
	a, b := proto.Clone(old).(*v1.StorageClass), proto.Clone(new).(*v1.StorageClass)
	a.Metadata, b.Metadata = nil, nil
	if !proto.Equal(a, b) {
		errs.Add("parameters", "updates to parameters, provisioner, reclaimPolicy and volumeBindingMode are forbidden")
	}
	return errs
}
