package manifest

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzDecode: Decode never panics, and whatever it decodes re-encodes (YAML
// and JSON, alone and as a List) to input that decodes to equal messages.
//
//	go test ./api/manifest -run '^$' -fuzz FuzzDecode -fuzztime 30s
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: 1}\n",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"AAE="}}`,
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: {x: \"1\"}}}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, generation: 3, resourceVersion: \"9\"}\nspec: {replicas: 0, strategy: {rollingUpdate: {maxSurge: 1}}}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n, creationTimestamp: \"2024-05-01T10:00:00.5Z\"}\nspec: {podCIDR: 10.244.0.0/24}\nstatus: {capacity: {cpu: 1.5}}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}], terminationGracePeriodSeconds: 1e3}\n",
		"- 1\n",
		"{",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode("fuzz.yaml", data)
		if err != nil {
			if objs != nil {
				t.Fatalf("objects returned with error %v", err)
			}
			return
		}
		for _, o := range objs {
			for _, format := range []Format{YAML, JSON} {
				out, err := Marshal(o.Object, format)
				if err != nil {
					t.Fatalf("Marshal(%v): %v", o.Object, err)
				}
				back, err := Decode("again", out)
				if err != nil {
					t.Fatalf("re-decode failed: %v\ninput:\n%q\nencoded:\n%s", err, data, out)
				}
				if len(back) != 1 || !proto.Equal(back[0].Object, o.Object) {
					t.Fatalf("round trip changed the object\ninput:\n%q\nencoded:\n%s", data, out)
				}
			}
		}
	})
}
