package kubeapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// testVolumeMountFields: volumeMounts[].mountPropagation and
// recursiveReadOnly, under Kubernetes' JSON names, are stored as sent
// (read back through both doors), and a bad value is refused with 422
// naming the field and nothing stored.
func testVolumeMountFields(t *testing.T, e *env) {
	const pods = "/api/v1/namespaces/default/pods"
	const good = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"mounts"},"spec":{
		"volumes":[{"name":"a","emptyDir":{}},{"name":"b","emptyDir":{}}],
		"containers":[{"name":"c","image":"busybox:1.36","volumeMounts":[
			{"name":"a","mountPath":"/a","mountPropagation":"HostToContainer"},
			{"name":"b","mountPath":"/b","readOnly":true,"recursiveReadOnly":"IfPossible"}]}]}}`
	if code, body := e.do(t, "POST", pods, "application/json", []byte(good)); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	_, body := e.do(t, "GET", pods+"/mounts", "", nil)
	for _, want := range []string{`"mountPropagation":"HostToContainer"`, `"recursiveReadOnly":"IfPossible"`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET through the HTTP door lacks %s:\n%s", want, body)
		}
	}
	p, err := client.For[*v1.Pod](e.srv.Client).Get(context.Background(), "default", "mounts")
	if err != nil {
		t.Fatal(err)
	}
	m := p.Spec.Containers[0].VolumeMounts
	if m[0].GetMountPropagation() != "HostToContainer" || m[0].RecursiveReadOnly != nil ||
		m[1].GetRecursiveReadOnly() != "IfPossible" || m[1].MountPropagation != nil {
		t.Errorf("gRPC door reads %v", m)
	}
	bad := strings.Replace(good, `"mounts"`, `"mounts-bad"`, 1)
	bad = strings.Replace(bad, `"readOnly":true,`, "", 1)
	code, body := e.do(t, "POST", pods, "application/json", []byte(bad))
	if code != 422 || !strings.Contains(body, "spec.containers[0].volumeMounts[1].recursiveReadOnly") ||
		!strings.Contains(body, "may only be specified when readOnly is true") {
		t.Fatalf("bad recursiveReadOnly: %d %s", code, body)
	}
	if _, err := client.For[*v1.Pod](e.srv.Client).Get(context.Background(), "default", "mounts-bad"); !apierrors.IsNotFound(err) {
		t.Errorf("the refused pod was stored (%v)", err)
	}
	if _, err := client.For[*v1.Pod](e.srv.Client).Delete(context.Background(), "default", "mounts", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
