package manifest_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// A revision's data is Kubernetes' patch of spec.template, the template in
// its Kubernetes JSON shape (numbers as numbers, int-or-string ports as
// numbers), and reads back to the same template.
func TestRevisionData(t *testing.T) {
	template := &v1.PodTemplateSpec{
		Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}},
		Spec: &v1.PodSpec{TerminationGracePeriodSeconds: proto.Int64(30), Containers: []*v1.Container{{Name: "web", Image: "web:2",
			Ports:          []*v1.ContainerPort{{ContainerPort: 8080, Protocol: "TCP"}},
			ReadinessProbe: &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/", Port: "8080"}},
			Resources:      &v1.ResourceRequirements{Requests: map[string]string{"cpu": "250m"}}}}},
	}
	data, err := manifest.RevisionData(template)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := protojson.Marshal(data)
	for _, want := range []string{`"$patch":"replace"`, `"containerPort":8080`, `"port":8080`, `"terminationGracePeriodSeconds":30`, `"cpu":"250m"`} {
		if !strings.Contains(strings.ReplaceAll(string(j), " ", ""), want) {
			t.Errorf("data lacks %s: %s", want, j)
		}
	}
	if keys := data.GetFields(); len(keys) != 1 || len(keys["spec"].GetStructValue().GetFields()) != 1 {
		t.Errorf("data is more than spec.template: %s", j)
	}
	got, err := manifest.RevisionTemplate(data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, template) {
		t.Errorf("round trip: %v, want %v", got, template)
	}
}

func TestRevisionTemplateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"no spec", `{"metadata":{}}`, "data.spec: expected a patch of spec.template, got null"},
		{"no template", `{"spec":{"replicas":3}}`, "data.spec.template: expected a pod template, got null"},
		{"template not a mapping", `{"spec":{"template":"x"}}`, "data.spec.template: expected a pod template, got the string \"x\""},
		{"unknown field", `{"spec":{"template":{"spec":{"containerz":[{"name":"a"}]},"$patch":"replace"}}}`, `data.spec.template.spec.containerz: unknown field (did you mean "containers"?)`},
		{"wrong type", `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":3,"ports":[{"containerPort":"x"}]}]}}}}`, "data.spec.template.spec.containers[0].ports[0].containerPort: expected an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &structpb.Struct{}
			if err := protojson.Unmarshal([]byte(tc.data), d); err != nil {
				t.Fatal(err)
			}
			_, err := manifest.RevisionTemplate(d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := manifest.RevisionTemplate(nil); err == nil || err.Error() != "data: required" {
		t.Errorf("nil data: %v", err)
	}
}
