package endpoints_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/endpoints"
)

func newPod(name string, labels map[string]string, httpPort int32) *v1.Pod {
	return &v1.Pod{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "echo:1",
			Ports: []*v1.ContainerPort{{Name: "http", ContainerPort: httpPort}}}}}}
}

// state renders the Endpoints as "ready=[pods] notready=[pods] ports" per
// subset, by pod name; "<none>" if there is no object.
func state(ctx context.Context, c *client.Client, name string) string {
	e, err := client.For[*v1.Endpoints](c).Get(ctx, "default", name)
	if apierrors.IsNotFound(err) {
		return "<none>"
	}
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, s := range e.Subsets {
		var r, n, p []string
		for _, a := range s.Addresses {
			r = append(r, a.TargetRef.Name)
		}
		for _, a := range s.NotReadyAddresses {
			n = append(n, a.TargetRef.Name)
		}
		for _, x := range s.Ports {
			p = append(p, fmt.Sprintf("%s:%d", x.Name, x.Port))
		}
		slices.Sort(r)
		slices.Sort(n)
		out = append(out, fmt.Sprintf("ready=%v notready=%v ports=%v", r, n, p))
	}
	return strings.Join(out, "; ")
}

func waitState(t *testing.T, ctx context.Context, c *client.Client, name, want string) {
	t.Helper()
	wait.Eventually(t, 15*time.Second, "endpoints "+name, func() error {
		got := state(ctx, c, name)
		if got == want {
			return nil
		}
		return fmt.Errorf("endpoints %s: %s, want %s", name, got, want)
	})
}

func TestEndpointsController(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	c := s.Client
	d := controllertest.Deps(ctx, c)
	ctrl, err := endpoints.New(d, endpoints.Config{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, ctrl)
	controllertest.StartCluster(t, c, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"},
		NeverReady: func(p *v1.Pod) bool { return p.Metadata.Labels["ready"] == "no" }})

	pods, svcs, eps := client.For[*v1.Pod](c), client.For[*v1.Service](c), client.For[*v1.Endpoints](c)
	for _, p := range []*v1.Pod{
		newPod("web-1", map[string]string{"app": "web"}, 8080),
		newPod("web-2", map[string]string{"app": "web"}, 8080),
		newPod("web-3", map[string]string{"app": "web", "ready": "no"}, 8080),
		newPod("web-4", map[string]string{"app": "web"}, 9090),
		newPod("other", map[string]string{"app": "other"}, 8080),
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svcs.Create(ctx, &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"tier": "front"}},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*v1.ServicePort{{Name: "http", Port: 80, TargetPort: "http"}}}}); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, c, "web", "ready=[web-1 web-2] notready=[web-3] ports=[http:8080]; ready=[web-4] notready=[] ports=[http:9090]")
	e, err := eps.Get(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if e.Metadata.Labels["tier"] != "front" {
		t.Errorf("labels not copied from the Service: %v", e.Metadata.Labels)
	}
	for _, a := range e.Subsets[0].Addresses {
		if a.Ip == "" || (a.NodeName != "n1" && a.NodeName != "n2") || a.TargetRef.Uid == "" {
			t.Errorf("address %v", a)
		}
	}

	// A pod whose labels stop matching leaves; a deleted pod leaves.
	if _, err := pods.Mutate(ctx, "default", "web-1", false, func(p *v1.Pod) error { p.Metadata.Labels["app"] = "moved"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Delete(ctx, "default", "web-4", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, c, "web", "ready=[web-2] notready=[web-3] ports=[http:8080]")

	// Someone else's edit or delete is undone.
	if _, err := eps.Mutate(ctx, "default", "web", false, func(e *v1.Endpoints) error { e.Subsets = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, c, "web", "ready=[web-2] notready=[web-3] ports=[http:8080]")
	if _, err := eps.Delete(ctx, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, c, "web", "ready=[web-2] notready=[web-3] ports=[http:8080]")

	// A selector matching nothing: an Endpoints object with no subsets.
	if _, err := svcs.Create(ctx, &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "nobody"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "nobody"}, Ports: []*v1.ServicePort{{Port: 80}}}}); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, c, "nobody", "")

	// A Service without a selector keeps the user's Endpoints.
	if _, err := svcs.Create(ctx, &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "manual"},
		Spec: &v1.ServiceSpec{Ports: []*v1.ServicePort{{Port: 80}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eps.Create(ctx, &v1.Endpoints{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "manual"},
		Subsets: []*v1.EndpointSubset{{Addresses: []*v1.EndpointAddress{{Ip: "192.0.2.7", TargetRef: &v1.ObjectReference{Name: "external"}}},
			Ports: []*v1.EndpointPort{{Port: 80}}}}}); err != nil {
		t.Fatal(err)
	}

	// Deleting the Service deletes its Endpoints.
	if _, err := svcs.Delete(ctx, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, c, "web", "<none>")
	if got := state(ctx, c, "manual"); got != "ready=[external] notready=[] ports=[:80]" {
		t.Errorf("user-managed Endpoints changed: %s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := endpoints.Config{Workers: -1}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--concurrent-endpoint-syncs") {
		t.Fatalf("got %v", err)
	}
}
