package apiserver_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// Claims get the default class (local-path, made at start); an unknown
// class, or a ReadWriteMany claim of local-path, is refused naming the
// field, and nothing is stored.
func TestClaimAdmission(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	sc, err := client.For[*v1.StorageClass](s.Client).Get(ctx, "", "local-path")
	if err != nil || sc.GetVolumeBindingMode() != "WaitForFirstConsumer" {
		t.Fatalf("default class: %v %v", sc, err)
	}
	pvcs := client.For[*v1.PersistentVolumeClaim](s.Client)
	claim := func(name string, class *string, modes ...string) (*v1.PersistentVolumeClaim, error) {
		return pvcs.Create(ctx, &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: &v1.PersistentVolumeClaimSpec{AccessModes: modes, StorageClassName: class,
				Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}}}})
	}
	c, err := claim("data", nil, "ReadWriteOnce")
	if err != nil || c.Spec.GetStorageClassName() != "local-path" || c.Status.GetPhase() != "Pending" {
		t.Fatalf("claim without class: %v, %v", c, err)
	}
	for _, bad := range []struct {
		name, want string
		class      *string
		mode       string
	}{
		{"unknown", `spec.storageClassName: storageclass.storage.k8s.io "fast" not found`, proto.String("fast"), "ReadWriteOnce"},
		{"shared", `spec.accessModes[0]: "ReadWriteMany" is not supported by tugboat.io/local-path`, nil, "ReadWriteMany"},
		{"nomode", "spec.accessModes: at least 1 access mode is required", nil, ""},
	} {
		modes := []string{bad.mode}
		if bad.mode == "" {
			modes = nil
		}
		if _, err := claim(bad.name, bad.class, modes...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.name, err, bad.want)
		}
		if _, err := pvcs.Get(ctx, "default", bad.name); err == nil {
			t.Errorf("%s was stored", bad.name)
		}
	}
	// local-path with Immediate binding cannot work: refused.
	_, err = client.For[*v1.StorageClass](s.Client).Create(ctx, &v1.StorageClass{Metadata: &v1.ObjectMeta{Name: "now"}, Provisioner: "tugboat.io/local-path",
		VolumeBindingMode: proto.String("Immediate")})
	if err == nil || !strings.Contains(err.Error(), "volumeBindingMode: tugboat.io/local-path needs WaitForFirstConsumer") {
		t.Errorf("local-path Immediate: %v", err)
	}
}
