package apiserver_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func debugPod(name string) *v1.Pod {
	return &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.PodSpec{NodeName: "n1", Containers: []*v1.Container{{Name: "app", Image: "busybox"}}}}
}

func debugContainer(name string) *v1.EphemeralContainer {
	return &v1.EphemeralContainer{Name: name, Image: "busybox:1.36", Stdin: true, Tty: true, TargetContainerName: "app"}
}

func wantInvalid(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: want Invalid %q, got %v", what, msg, err)
	}
}

// TestEphemeralContainersSubresource: on real etcd, ephemeral containers
// are refused at create and in an update of the pod, added through
// pods/ephemeralcontainers (Update and strategic merge Patch, as kubectl
// debug sends it), and never changed or removed there; the rest of the
// pod is kept as stored.
func TestEphemeralContainersSubresource(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)

	p := debugPod("web")
	p.Spec.EphemeralContainers = []*v1.EphemeralContainer{debugContainer("debugger")}
	_, err := pods.Create(ctx, p)
	wantInvalid(t, "create with ephemeral containers", err, "spec.ephemeralContainers: Forbidden: cannot be set on create")

	p.Spec.EphemeralContainers = nil
	p, err = pods.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// An update of the pod may not add one.
	upd := proto.Clone(p).(*v1.Pod)
	upd.Spec.EphemeralContainers = []*v1.EphemeralContainer{debugContainer("debugger")}
	_, err = pods.Update(ctx, upd)
	wantInvalid(t, "pod update adding one", err, "spec.ephemeralContainers: Forbidden: may be changed only through the pods/ephemeralcontainers subresource")

	// Added through the subresource; what else the body changes is ignored.
	upd.Metadata.Labels = map[string]string{"sneaky": "yes"}
	upd.Spec.Containers[0].Image = "nginx"
	out, err := s.Client.UpdateEphemeralContainers(ctx, upd)
	if err != nil {
		t.Fatal(err)
	}
	ec := out.GetSpec().GetEphemeralContainers()
	if len(ec) != 1 || ec[0].Name != "debugger" || ec[0].TargetContainerName != "app" || ec[0].ImagePullPolicy != "IfNotPresent" || ec[0].TerminationMessagePolicy != "File" {
		t.Fatalf("ephemeral containers after the update: %v", ec)
	}
	if out.Metadata.Labels["sneaky"] != "" || out.Spec.Containers[0].Image != "busybox" {
		t.Errorf("the subresource changed more than the ephemeral containers: labels %v image %s", out.Metadata.Labels, out.Spec.Containers[0].Image)
	}
	got, err := s.Client.GetEphemeralContainers(ctx, "default", "web")
	if err != nil || len(got.GetSpec().GetEphemeralContainers()) != 1 {
		t.Fatalf("get through the subresource: %v %v", got, err)
	}

	// kubectl debug's patch: a strategic merge patch of the pod that adds
	// one, with the directive two-way patches carry, and resources: {}
	// (Go's encoding of an empty ResourceRequirements).
	patch := `{"spec":{"$setElementOrder/ephemeralContainers":[{"name":"debugger"},{"name":"debugger-2"}],` +
		`"ephemeralContainers":[{"image":"busybox:1.36","name":"debugger-2","resources":{},"stdin":true,"targetContainerName":"app","terminationMessagePolicy":"File","tty":true}]}}`
	out, err = pods.Patch(ctx, "default", "web", "strategic", []byte(patch), client.PatchOptions{Subresource: "ephemeralcontainers"})
	if err != nil {
		t.Fatal(err)
	}
	if ec := out.GetSpec().GetEphemeralContainers(); len(ec) != 2 || ec[0].Name != "debugger" || ec[1].Name != "debugger-2" {
		t.Fatalf("after kubectl debug's patch: %v", ec)
	}

	// Never changed or removed.
	cur := proto.Clone(out).(*v1.Pod)
	cur.Spec.EphemeralContainers[0].Image = "busybox:1.37"
	_, err = s.Client.UpdateEphemeralContainers(ctx, cur)
	wantInvalid(t, "change", err, `spec.ephemeralContainers[debugger]: Forbidden: existing ephemeral containers "debugger" may not be changed`)
	cur = proto.Clone(out).(*v1.Pod)
	cur.Spec.EphemeralContainers = cur.Spec.EphemeralContainers[1:]
	_, err = s.Client.UpdateEphemeralContainers(ctx, cur)
	wantInvalid(t, "remove", err, `spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed`)
	_, err = pods.Patch(ctx, "default", "web", "json", []byte(`[{"op":"remove","path":"/spec/ephemeralContainers/0"}]`), client.PatchOptions{Subresource: "ephemeralcontainers"})
	wantInvalid(t, "remove by JSON patch", err, `existing ephemeral containers "debugger" may not be removed`)
	// A field an ephemeral container may not have, and a target that is
	// not one of the pod's containers.
	_, err = pods.Patch(ctx, "default", "web", "strategic",
		[]byte(`{"spec":{"ephemeralContainers":[{"name":"probe","image":"busybox","ports":[{"containerPort":80}],"targetContainerName":"nope"}]}}`),
		client.PatchOptions{Subresource: "ephemeralcontainers"})
	wantInvalid(t, "ports", err, "ports: Forbidden: cannot be set for an Ephemeral Container")
	wantInvalid(t, "target", err, `targetContainerName: Not found: "nope"`)

	// Pod Security admission checks what an ephemeral container adds.
	if _, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "baseline",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}); err != nil {
		t.Fatal(err)
	}
	bp := debugPod("guarded")
	bp.Metadata.Namespace = "baseline"
	if _, err := pods.Create(ctx, bp); err != nil {
		t.Fatal(err)
	}
	_, err = pods.Patch(ctx, "baseline", "guarded", "strategic",
		[]byte(`{"spec":{"ephemeralContainers":[{"name":"root","image":"busybox","securityContext":{"privileged":true}}]}}`), client.PatchOptions{Subresource: "ephemeralcontainers"})
	if !isForbidden(err) || !strings.Contains(err.Error(), "privileged") {
		t.Errorf("privileged ephemeral container under baseline: %v, want Forbidden", err)
	}
	if _, err := pods.Patch(ctx, "baseline", "guarded", "strategic",
		[]byte(`{"spec":{"ephemeralContainers":[{"name":"plain","image":"busybox"}]}}`), client.PatchOptions{Subresource: "ephemeralcontainers"}); err != nil {
		t.Errorf("plain ephemeral container under baseline: %v", err)
	}

	// Other kinds have no such subresource.
	_, err = client.For[*v1.ConfigMap](s.Client).Patch(ctx, "default", "x", "merge", []byte(`{}`), client.PatchOptions{Subresource: "ephemeralcontainers"})
	if !apierrors.IsNotFound(err) {
		t.Errorf("configmaps/ephemeralcontainers: %v, want NotFound", err)
	}
	// The pod's spec is as created, with the ephemeral containers only.
	final, err := pods.Get(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(final.Spec.EphemeralContainers) != 2 || final.Spec.Containers[0].Image != "busybox" {
		t.Errorf("stored pod: %v", final.Spec)
	}
}

// TestEphemeralContainersRBAC: the subresource is authorized on
// pods/ephemeralcontainers: a user who may patch pods may not add one, a
// user granted the subresource may, and a kubelet (node authorizer) may
// not, even for a pod on its node.
func TestEphemeralContainersRBAC(t *testing.T) {
	s := apiservertest.StartSecure(t, withTokens(t, "podeditor", "debugger"))
	ctx := ctxT(t)
	if _, err := client.For[*v1.Pod](s.Client).Create(ctx, debugPod("web")); err != nil {
		t.Fatal(err)
	}
	rbac := func(obj v1.Object) {
		t.Helper()
		var err error
		switch o := obj.(type) {
		case *v1.Role:
			_, err = client.For[*v1.Role](s.Client).Create(ctx, o)
		case *v1.RoleBinding:
			_, err = client.For[*v1.RoleBinding](s.Client).Create(ctx, o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	rbac(&v1.Role{Metadata: &v1.ObjectMeta{Name: "pods", Namespace: "default"}, Rules: []*v1.PolicyRule{rule([]string{""}, []string{"pods"}, []string{"get", "update", "patch"})}})
	rbac(&v1.Role{Metadata: &v1.ObjectMeta{Name: "debug", Namespace: "default"}, Rules: []*v1.PolicyRule{
		rule([]string{""}, []string{"pods"}, []string{"get"}), rule([]string{""}, []string{"pods/ephemeralcontainers"}, []string{"get", "update", "patch"})}})
	rbac(roleBinding("default", "podeditor", "podeditor", "Role", "pods"))
	rbac(roleBinding("default", "debugger", "debugger", "Role", "debug"))
	waitAllowed(t, s, "podeditor", "patch", "pods", "default", "web")
	waitAllowed(t, s, "debugger", "patch", "pods/ephemeralcontainers", "default", "web")

	add := `{"spec":{"ephemeralContainers":[{"name":"d","image":"busybox","stdin":true,"tty":true}]}}`
	patchAs := func(c *client.Client) error {
		_, err := client.For[*v1.Pod](c).Patch(ctx, "default", "web", "strategic", []byte(add), client.PatchOptions{Subresource: "ephemeralcontainers"})
		return err
	}
	if err := patchAs(tokenClient(t, s, "podeditor")); !isForbidden(err) || !strings.Contains(err.Error(), "pods/ephemeralcontainers") {
		t.Errorf("podeditor: %v, want Forbidden on pods/ephemeralcontainers", err)
	}
	if err := patchAs(s.ClientAs("node-n1")); !isForbidden(err) {
		t.Errorf("kubelet n1 on its own pod: %v, want Forbidden", err)
	}
	pod, err := s.ClientAs("node-n1").GetEphemeralContainers(ctx, "default", "web")
	if !isForbidden(err) {
		t.Errorf("kubelet n1 reading the subresource: %v %v, want Forbidden", pod, err)
	}
	if err := patchAs(tokenClient(t, s, "debugger")); err != nil {
		t.Fatalf("debugger: %v", err)
	}
	pod, err = tokenClient(t, s, "debugger").GetEphemeralContainers(ctx, "default", "web")
	if err != nil || len(pod.GetSpec().GetEphemeralContainers()) != 1 {
		t.Fatalf("debugger reads it back: %v %v", pod, err)
	}
}
