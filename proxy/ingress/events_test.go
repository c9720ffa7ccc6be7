package ingress

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// Two nodes' proxies serve the same broken Ingress; only the status
// Lease holder writes its Events, so the problem is one Event, not one
// per node. When the holder stops, the other proxy takes the Lease and
// reports the lasting problem itself.
func TestOneEventWriterAcrossProxies(t *testing.T) {
	cl := startCluster(t)
	a := cl.first
	b := cl.startProxy("node-b")
	cl.apply(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: broken
spec:
  defaultBackend:
    service:
      name: missing
      port:
        number: 80
`)
	// Both serve it (every instance serves traffic).
	for _, p := range []*proxy{a, b} {
		wait.Eventually(t, 20*time.Second, "503 ServiceNotFound from "+p.c.cfg.NodeName, func() error {
			code, _, h := do(t, httpClient, getReq(p.http, "any.example.com", "/"))
			if code != 503 || h.Get("X-Tugboat-Ingress-Reason") != "ServiceNotFound" {
				return fmt.Errorf("got %d %s", code, h.Get("X-Tugboat-Ingress-Reason"))
			}
			return nil
		})
	}
	leader, other := a, b
	wait.Eventually(t, 30*time.Second, "one proxy holding the status Lease", func() error {
		la, lb := testutil.ToFloat64(a.c.metrics.leader), testutil.ToFloat64(b.c.metrics.leader)
		switch {
		case la == 1 && lb == 0:
			leader, other = a, b
		case lb == 1 && la == 0:
			leader, other = b, a
		default:
			return fmt.Errorf("leader gauges %v and %v", la, lb)
		}
		return nil
	})
	ev := cl.event("broken", "ServiceNotFound")
	if got := ev.GetSource().GetHost(); got != leader.c.cfg.NodeName {
		t.Errorf("Event source host %q, want the Lease holder %s", got, leader.c.cfg.NodeName)
	}
	// Both rebuild again after having served the Ingress (the rebuild
	// counter moves after report): still one writer, one Event.
	for _, p := range []*proxy{a, b} {
		before := testutil.ToFloat64(p.c.metrics.rebuilds)
		p.c.Changed()
		wait.Eventually(t, 20*time.Second, "a rebuild of "+p.c.cfg.NodeName, func() error {
			if testutil.ToFloat64(p.c.metrics.rebuilds) <= before {
				return fmt.Errorf("no rebuild yet")
			}
			return nil
		})
	}
	if n := testutil.ToFloat64(other.c.metrics.events.WithLabelValues("ServiceNotFound")); n != 0 {
		t.Errorf("the proxy without the Lease (%s) recorded %v ServiceNotFound events", other.c.cfg.NodeName, n)
	}
	if n := testutil.ToFloat64(leader.c.metrics.events.WithLabelValues("ServiceNotFound")); n != 1 {
		t.Errorf("the Lease holder (%s) recorded %v ServiceNotFound events, want 1", leader.c.cfg.NodeName, n)
	}
	if evs := problemEvents(t, cl, "broken", "ServiceNotFound"); len(evs) != 1 || evs[0].GetCount() != 1 {
		t.Errorf("ServiceNotFound Events: %v, want one with count 1", evs)
	}
	// The holder stops (releasing the Lease): the other takes over and
	// reports the problem that lasts.
	leader.stop()
	wait.Eventually(t, 60*time.Second, "ServiceNotFound reported by "+other.c.cfg.NodeName, func() error {
		for _, e := range problemEvents(t, cl, "broken", "ServiceNotFound") {
			if e.GetSource().GetHost() == other.c.cfg.NodeName {
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

func getReq(addr, host, path string) *http.Request {
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.Host = host
	return req
}

func problemEvents(t *testing.T, cl *cluster, ingress, reason string) []*v1.Event {
	t.Helper()
	evs, _, err := client.For[*v1.Event](cl.admin).List(context.Background(), client.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.Event
	for _, e := range evs {
		if e.GetInvolvedObject().GetKind() == "Ingress" && e.GetInvolvedObject().GetName() == ingress && e.GetReason() == reason {
			out = append(out, e)
		}
	}
	return out
}
