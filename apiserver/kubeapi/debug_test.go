package kubeapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// testKubectlDebug: the real kubectl's debug (pod-ephemeral mode, not
// attached: no kubelet runs here) adds an ephemeral container through
// pods/ephemeralcontainers with the strategic merge patch it makes, the
// target container named; a second debug adds a second one; a viewer (who may
// read pods at most) is refused; discovery lists the subresource.
func testKubectlDebug(t *testing.T, e *env) {
	ctx := context.Background()
	pods := client.For[*v1.Pod](e.srv.Client)
	if _, err := pods.Create(ctx, &v1.Pod{Metadata: &v1.ObjectMeta{Name: "debuggee", Namespace: "default"},
		Spec: &v1.PodSpec{NodeName: "n1", Containers: []*v1.Container{{Name: "app", Image: "tugboat.local/echo:latest"}}}}); err != nil {
		t.Fatal(err)
	}
	out := e.kubectl(t, "debug", "debuggee", "--image=tugboat.local/busybox:latest", "--target=app", "--profile=baseline")
	if !strings.Contains(out, "Targeting container \"app\"") {
		t.Errorf("kubectl debug: %s", out)
	}
	e.kubectl(t, "debug", "debuggee", "--image=tugboat.local/busybox:latest", "-c", "second", "--profile=baseline", "--", "sleep", "3600")
	p, err := pods.Get(ctx, "default", "debuggee")
	if err != nil {
		t.Fatal(err)
	}
	ec := p.GetSpec().GetEphemeralContainers()
	if len(ec) != 2 || !strings.HasPrefix(ec[0].Name, "debugger-") || ec[0].TargetContainerName != "app" || ec[0].Image != "tugboat.local/busybox:latest" ||
		ec[1].Name != "second" || strings.Join(ec[1].Command, " ") != "sleep 3600" {
		t.Fatalf("ephemeral containers after two kubectl debug: %v", ec)
	}
	if out, err := e.kubectlAs(t, e.view, "", "debug", "debuggee", "--image=tugboat.local/busybox:latest"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("viewer's kubectl debug: %v %s, want Forbidden", err, out)
	}
	if out := e.kubectl(t, "get", "--raw", "/api/v1"); !strings.Contains(out, `"name":"pods/ephemeralcontainers"`) {
		t.Errorf("/api/v1 does not list pods/ephemeralcontainers: %s", out)
	}
	// kubectl get shows them in the pod; create refuses them.
	if out := e.kubectl(t, "get", "pod", "debuggee", "-o", "jsonpath={.spec.ephemeralContainers[1].name}"); out != "second" {
		t.Errorf("jsonpath: %q", out)
	}
	f := write(t, t.TempDir(), "p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: withdebug}\nspec:\n  containers: [{name: a, image: x}]\n  ephemeralContainers: [{name: d, image: x}]\n")
	if out, err := e.kubectlAs(t, e.admin, "", "create", "-f", f); err == nil || !strings.Contains(out, "spec.ephemeralContainers: Forbidden: cannot be set on create") {
		t.Errorf("create with ephemeralContainers: %v %s", err, out)
	}
}
