package validation_test

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestCoordinationValidation(t *testing.T) {
	lease := func(d int32) v1.Object {
		return &v1.Lease{Metadata: &v1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}, Spec: &v1.LeaseSpec{HolderIdentity: "n1", LeaseDurationSeconds: d}}
	}
	runValidation(t, []validationCase{
		{"valid lease", func() v1.Object { return lease(40) }, nil},
		{"negative lease duration", func() v1.Object { return lease(-1) }, []string{"spec.leaseDurationSeconds: must be >= 0"}},
	})
}
