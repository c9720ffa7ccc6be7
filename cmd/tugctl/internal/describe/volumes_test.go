package describe

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// The file-projecting volumes are described as kubectl describes them.
func TestDescribePodVolumes(t *testing.T) {
	var buf bytes.Buffer
	d := newDescriber(&buf, nil, false)
	d.volumes([]*v1.Volume{
		{Name: "kube-api-access-x7k2p", Projected: &v1.ProjectedVolumeSource{Sources: []*v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: proto.Int64(3607)}},
			{ConfigMap: &v1.ConfigMapProjection{Name: "kube-root-ca.crt"}},
			{DownwardApi: &v1.DownwardAPIProjection{}},
			{Secret: &v1.SecretProjection{Name: "tls", Optional: true}},
		}}},
		{Name: "podinfo", DownwardApi: &v1.DownwardAPIVolumeSource{Items: []*v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
		}}},
	})
	if err := d.flush(); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"  kube-api-access-x7k2p:\n    Type:                    Projected (a volume that contains injected data from multiple sources)\n" +
			"    TokenExpirationSeconds:  3607\n    ConfigMapName:           kube-root-ca.crt\n    ConfigMapOptional:       false\n" +
			"    DownwardAPI:             true\n    SecretName:              tls\n    SecretOptionalName:      true\n",
		"    Type:  DownwardAPI (a volume populated by information about the pod)\n    Items:\n" +
			"      metadata.labels -> labels\n      limits.cpu -> cpu\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("describe output\n%s\nlacks\n%s", got, want)
		}
	}
}
