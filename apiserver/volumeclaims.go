package apiserver

import (
	"context"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// claimAdmission is the PersistentVolumeClaim admission step (Kubernetes'
// DefaultStorageClass plugin plus the checks a user wants at once rather
// than a claim Pending forever): a new claim without storageClassName gets
// the default class; a named class must exist; a claim of the built-in
// local-path class may only ask for ReadWriteOnce or ReadWriteOncePod (a
// directory on one node).
type claimAdmission struct{ st *storage.Store }

func (a claimAdmission) Admit(ctx context.Context, obj, old v1.Object) error {
	if old != nil {
		return nil // the class is fixed after creation (validation)
	}
	c := obj.(*v1.PersistentVolumeClaim)
	scKind, _ := kinds.Lookup("StorageClass")
	if c.Spec.StorageClassName == nil {
		res, err := a.st.List(ctx, scKind, storage.ListOptions{})
		if err != nil {
			return err
		}
		for _, o := range res.Items {
			if o.GetMetadata().GetAnnotations()[validation.DefaultStorageClassAnnotation] == "true" {
				c.Spec.StorageClassName = proto.String(o.GetMetadata().GetName())
				break
			}
		}
		if c.Spec.StorageClassName == nil {
			return nil // no default class: the claim binds to a volume without class
		}
	}
	name := c.Spec.GetStorageClassName()
	if name == "" {
		return nil
	}
	o, err := a.st.Get(ctx, scKind, "", name)
	if apierrors.IsNotFound(err) {
		return apierrors.Invalid("spec.storageClassName", "storageclass.storage.k8s.io %q not found", name)
	}
	if err != nil {
		return err
	}
	if sc := o.(*v1.StorageClass); sc.Provisioner == validation.LocalPathProvisioner {
		for i, m := range c.Spec.AccessModes {
			if !slices.Contains([]string{"ReadWriteOnce", "ReadWriteOncePod"}, m) {
				return apierrors.Invalid("spec.accessModes["+strconv.Itoa(i)+"]", "%q is not supported by %s (a directory on one node): use ReadWriteOnce or ReadWriteOncePod", m, sc.Provisioner)
			}
		}
	}
	return nil
}

func (claimAdmission) Release(context.Context, v1.Object) {}

// defaultStorageClass is the class every cluster starts with (created when
// missing at start, like the default RBAC policy): local-path, the default
// class, WaitForFirstConsumer, reclaim Delete.
func defaultStorageClass() *v1.StorageClass {
	return &v1.StorageClass{
		Metadata: &v1.ObjectMeta{Name: "local-path", Annotations: map[string]string{validation.DefaultStorageClassAnnotation: "true"},
			Labels: map[string]string{"kubernetes.io/bootstrapping": "defaults"}},
		Provisioner: validation.LocalPathProvisioner, ReclaimPolicy: proto.String("Delete"),
		VolumeBindingMode: proto.String("WaitForFirstConsumer"),
	}
}
