package endpoints_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/endpoints"
)

// slicesOf lists the slices of a Service by the label the proxy reads.
func slicesOf(ctx context.Context, t *testing.T, c *client.Client, svc string) []*v1.EndpointSlice {
	t.Helper()
	list, _, err := client.For[*v1.EndpointSlice](c).List(ctx, client.ListOptions{Namespace: "default", LabelSelector: endpoints.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// sliceSizes is "n1,n2,..." sorted, and the endpoints' total.
func sliceSizes(list []*v1.EndpointSlice) (string, int) {
	var sizes []int
	total := 0
	for _, s := range list {
		sizes = append(sizes, len(s.Endpoints))
		total += len(s.Endpoints)
	}
	slices.Sort(sizes)
	return strings.Trim(fmt.Sprint(sizes), "[]"), total
}

func TestEndpointSliceController(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 2*time.Minute)
	c := s.Client
	d := controllertest.Deps(ctx, c)
	ctrl, err := endpoints.NewSlices(d, endpoints.SliceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, ctrl)
	controllertest.StartCluster(t, c, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"}})
	pods, svcs := client.For[*v1.Pod](c), client.For[*v1.Service](c)

	if _, err := svcs.Create(ctx, &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"tier": "front"}},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*v1.ServicePort{{Name: "http", Port: 80, TargetPort: "http"}}}}); err != nil {
		t.Fatal(err)
	}
	// No pods yet: one empty placeholder slice.
	wait.Eventually(t, 15*time.Second, "placeholder slice", func() error {
		if got, _ := sliceSizes(slicesOf(ctx, t, c, "web")); got != "0" {
			return fmt.Errorf("slices %q", got)
		}
		return nil
	})

	// 250 ready pods: three slices (100, 100, 50).
	var wg sync.WaitGroup
	errs := make(chan error, 250)
	for i := range 250 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := newPod(fmt.Sprintf("web-%03d", i), map[string]string{"app": "web"}, 8080)
			if i == 0 {
				p.Metadata.Finalizers = []string{"test.tugboat.io/hold"} // stays Terminating when deleted
			}
			if _, err := pods.Create(ctx, p); err != nil {
				errs <- err
			}
		}()
		if i%16 == 15 {
			wg.Wait()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wait.Eventually(t, 60*time.Second, "250 endpoints in 3 slices", func() error {
		list := slicesOf(ctx, t, c, "web")
		sizes, total := sliceSizes(list)
		ready := 0
		for _, s := range list {
			for _, e := range s.Endpoints {
				if e.GetConditions().GetReady() {
					ready++
				}
			}
		}
		if sizes != "50 100 100" || ready != 250 {
			return fmt.Errorf("slices %q (%d endpoints, %d ready)", sizes, total, ready)
		}
		return nil
	})
	for _, s := range slicesOf(ctx, t, c, "web") {
		m := s.Metadata
		if m.Labels[endpoints.LabelManagedBy] != endpoints.ManagedBySlices || m.Labels["tier"] != "front" || s.AddressType != "IPv4" ||
			len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "Service" || !strings.HasPrefix(m.Name, "web-") {
			t.Fatalf("slice metadata %v", m)
		}
		if len(s.Ports) != 1 || s.Ports[0].GetName() != "http" || s.Ports[0].GetPort() != 8080 || s.Ports[0].GetProtocol() != "TCP" {
			t.Fatalf("slice ports %v", s.Ports)
		}
		for _, e := range s.Endpoints {
			if e.GetNodeName() == "" || e.GetTargetRef().GetName() == "" || len(e.Addresses) != 1 {
				t.Fatalf("endpoint %v", e)
			}
		}
	}

	// A pod being deleted stays, terminating and still serving, not ready.
	if _, err := pods.Delete(ctx, "default", "web-000", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 15*time.Second, "terminating endpoint", func() error {
		for _, s := range slicesOf(ctx, t, c, "web") {
			for _, e := range s.Endpoints {
				if e.GetTargetRef().GetName() == "web-000" {
					if cd := e.GetConditions(); cd.GetReady() || !cd.GetServing() || !cd.GetTerminating() {
						return fmt.Errorf("web-000: %v", cd)
					}
					return nil
				}
			}
		}
		return fmt.Errorf("web-000 left the slices")
	})
	// The finalizer goes: so does the endpoint.
	if _, err := pods.Mutate(ctx, "default", "web-000", false, func(p *v1.Pod) error { p.Metadata.Finalizers = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 15*time.Second, "249 endpoints", func() error {
		if sizes, total := sliceSizes(slicesOf(ctx, t, c, "web")); total != 249 {
			return fmt.Errorf("slices %q (%d endpoints)", sizes, total)
		}
		return nil
	})

	// Someone else's edit is undone.
	first := slicesOf(ctx, t, c, "web")[0]
	if _, err := client.For[*v1.EndpointSlice](c).Mutate(ctx, "default", first.Metadata.Name, false, func(s *v1.EndpointSlice) error {
		s.Endpoints = s.Endpoints[:1]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 15*time.Second, "edit undone", func() error {
		if sizes, total := sliceSizes(slicesOf(ctx, t, c, "web")); total != 249 {
			return fmt.Errorf("slices %q (%d endpoints)", sizes, total)
		}
		return nil
	})

	// A Service without a selector: its Endpoints are mirrored.
	if _, err := svcs.Create(ctx, &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "manual"},
		Spec: &v1.ServiceSpec{Ports: []*v1.ServicePort{{Port: 80}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.Endpoints](c).Create(ctx, &v1.Endpoints{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "manual"},
		Subsets: []*v1.EndpointSubset{{Addresses: []*v1.EndpointAddress{{Ip: "192.0.2.7"}}, NotReadyAddresses: []*v1.EndpointAddress{{Ip: "192.0.2.8"}},
			Ports: []*v1.EndpointPort{{Port: 8080}}}}}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 15*time.Second, "mirrored slice", func() error {
		list := slicesOf(ctx, t, c, "manual")
		if len(list) != 1 || len(list[0].Endpoints) != 2 || list[0].Metadata.Labels[endpoints.LabelManagedBy] != endpoints.ManagedByMirroring {
			return fmt.Errorf("slices %v", list)
		}
		e := list[0].Endpoints
		if e[0].Addresses[0] != "192.0.2.7" || !e[0].GetConditions().GetReady() || e[1].GetConditions().GetReady() || list[0].Ports[0].GetPort() != 8080 {
			return fmt.Errorf("mirrored %v", list[0])
		}
		return nil
	})

	// Deleting the Service deletes its slices.
	if _, err := svcs.Delete(ctx, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 15*time.Second, "slices gone", func() error {
		if n := len(slicesOf(ctx, t, c, "web")); n != 0 {
			return fmt.Errorf("%d slices left", n)
		}
		return nil
	})
}
