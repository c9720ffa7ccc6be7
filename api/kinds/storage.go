// The storage group (storage.k8s.io/v1): its kinds and their defaults.

package kinds

import (
	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var storageKinds = []*Kind{
	{Name: "StorageClass", Plural: "storageclasses", Short: []string{"sc"}, APIVersion: "storage.k8s.io/v1",
		New: func() v1.Object { return &v1.StorageClass{} }, Default: typedDefault(defaultStorageClass), Validate: typed(validation.StorageClass),
		ValidateUpdate: typedUpdate(validation.StorageClassUpdate)},
}

func defaultStorageClass(c *v1.StorageClass) {
	if c.ReclaimPolicy == nil {
		c.ReclaimPolicy = proto.String("Delete")
	}
	if c.VolumeBindingMode == nil {
		c.VolumeBindingMode = proto.String("Immediate")
	}
}
