package manifest

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func storedPod() *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{
			Name: "nginx", Namespace: "default", Uid: "u-1", ResourceVersion: 1234, Generation: 2,
			Labels:            map[string]string{"app": "nginx", "version": "1"},
			CreationTimestamp: timestamppb.New(timestamppb.Now().AsTime().Truncate(1e9)),
		},
		Spec: &v1.PodSpec{
			Containers: []*v1.Container{{
				Name: "nginx", Image: "nginx:1.14.2",
				Ports:     []*v1.ContainerPort{{ContainerPort: 80, Protocol: "TCP"}},
				Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "250m"}},
			}},
			TerminationGracePeriodSeconds: proto.Int64(30),
			NodeSelector:                  map[string]string{"disk": "yes"},
		},
		Status: &v1.PodStatus{Phase: "Running", PodIp: "10.244.0.5"},
	}
}

func TestMarshalYAMLShape(t *testing.T) {
	out, err := Marshal(storedPod(), YAML)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.HasPrefix(s, "apiVersion: v1\nkind: Pod\nmetadata:\n") {
		t.Errorf("YAML does not start with apiVersion, kind, metadata:\n%s", s)
	}
	for _, want := range []string{
		`resourceVersion: "1234"`, "generation: 2", "terminationGracePeriodSeconds: 30",
		"containerPort: 80", "podIP: 10.244.0.5", `version: "1"`, `disk: "yes"`, "cpu: 250m",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("YAML lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "spec:") > strings.Index(s, "status:") {
		t.Errorf("status before spec:\n%s", s)
	}
	back, err := Decode("out.yaml", out)
	if err != nil {
		t.Fatalf("re-decode: %v", err)
	}
	if !proto.Equal(back[0].Object, storedPod()) {
		t.Errorf("round trip changed the pod:\n%v\n%v", back[0].Object, storedPod())
	}
}

func TestMarshalJSONShape(t *testing.T) {
	cm := &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": "1"}}
	out, err := Marshal(cm, JSON)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"ConfigMap\",\n    \"metadata\": {\n        \"name\": \"c\"\n    },\n    \"data\": {\n        \"a\": \"1\"\n    }\n}\n"
	if string(out) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", out, want)
	}
}

func TestMarshalListRoundTrip(t *testing.T) {
	objs := []v1.Object{storedPod(), &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "web"}, Status: &v1.NamespaceStatus{Phase: "Active"}}}
	for _, f := range []Format{YAML, JSON} {
		out, err := MarshalList(objs, f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode("list", out)
		if err != nil {
			t.Fatalf("format %d: re-decode: %v\n%s", f, err, out)
		}
		if len(back) != 2 || !proto.Equal(back[0].Object, objs[0]) || !proto.Equal(back[1].Object, objs[1]) {
			t.Errorf("format %d: round trip changed the list:\n%s", f, out)
		}
	}
}

func TestParseFormat(t *testing.T) {
	if f, err := ParseFormat("json"); err != nil || f != JSON {
		t.Errorf("ParseFormat(json) = %v, %v", f, err)
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) succeeded")
	}
}

// TestMarshalEmitsZeroScalars: the scalars Kubernetes always prints
// (emit_zero in the .proto files) are in the output when zero, and the
// output decodes back to the same object.
func TestMarshalEmitsZeroScalars(t *testing.T) {
	pod := storedPod()
	pod.Status.ContainerStatuses = []*v1.ContainerStatus{{
		Name: "nginx", Image: "nginx:1.14.2",
		State: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}},
	}}
	rs := &v1.ReplicaSet{Metadata: &v1.ObjectMeta{Name: "web"}, Status: &v1.ReplicaSetStatus{ObservedGeneration: 1}}
	for _, tc := range []struct {
		obj        v1.Object
		want, lack []string
	}{
		{pod, []string{`"restartCount": 0`, `"ready": false`, `"started": false`, `"exitCode": 0`, `"imageID": ""`},
			[]string{`"signal"`, `"message"`, `"containerID"`}},
		{rs, []string{`"replicas": 0`}, []string{`"readyReplicas"`, `"availableReplicas"`}},
	} {
		out, err := Marshal(tc.obj, JSON)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("JSON lacks %s:\n%s", w, out)
			}
		}
		for _, l := range tc.lack {
			if strings.Contains(string(out), l) {
				t.Errorf("JSON has %s, which Kubernetes leaves out when empty:\n%s", l, out)
			}
		}
		back, err := Decode("out.json", out)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !proto.Equal(back[0].Object, tc.obj) {
			t.Errorf("round trip changed the object:\n%v\n%v", back[0].Object, tc.obj)
		}
	}
}
