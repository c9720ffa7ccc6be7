package ingress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// Two hosts and two paths each, as a user writes them (the docs' shape),
// with an Exact and a Prefix rule on the same path, a wildcard host and a
// default backend.
const routingYAML = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  ingressClassName: tugboat
  defaultBackend:
    service:
      name: fallback
      port:
        number: 80
  rules:
  - host: foo.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: foo-web
            port:
              number: 80
      - path: /api
        pathType: Prefix
        backend:
          service:
            name: foo-api
            port:
              name: http
  - host: bar.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: bar-web
            port:
              number: 80
      - path: /api
        pathType: Exact
        backend:
          service:
            name: bar-api
            port:
              number: 80
      - path: /api
        pathType: Prefix
        backend:
          service:
            name: bar-api-prefix
            port:
              number: 80
  - host: "*.wild.example.com"
    http:
      paths:
      - path: /
        pathType: ImplementationSpecific
        backend:
          service:
            name: wild
            port:
              number: 80
`

func TestRouting(t *testing.T) {
	cl := startCluster(t)
	for _, name := range []string{"foo-web", "foo-api", "bar-web", "bar-api", "bar-api-prefix", "wild", "fallback"} {
		cl.service(name, cl.backend(name))
	}
	cl.apply(routingYAML)
	for _, c := range []struct{ host, path, want string }{
		{"foo.example.com", "/", "foo-web"},
		{"foo.example.com", "/index.html", "foo-web"},
		{"foo.example.com", "/api", "foo-api"},
		{"foo.example.com", "/api/", "foo-api"},
		{"foo.example.com", "/api/v1/users", "foo-api"},
		{"foo.example.com", "/apiary", "foo-web"}, // element-wise: /api does not match /apiary
		{"FOO.example.com:80", "/api", "foo-api"}, // host case and port ignored
		{"bar.example.com", "/api", "bar-api"},    // Exact wins over an equal Prefix
		{"bar.example.com", "/api/x", "bar-api-prefix"},
		{"bar.example.com", "/", "bar-web"},
		{"a.wild.example.com", "/x", "wild"},
		{"a.b.wild.example.com", "/x", "fallback"}, // a wildcard covers one label only
		{"unknown.example.com", "/", "fallback"},
	} {
		cl.eventually(c.host, c.path, 200, c.want+" ")
	}
	// The Host header reaches the backend as the client sent it.
	if _, body, _ := cl.get("foo.example.com", "/api/v1"); body != "foo-api foo.example.com/api/v1" {
		t.Errorf("backend saw %q", body)
	}
	// status.loadBalancer: the nodes' addresses, written by the Lease holder.
	for i, ip := range []string{"10.0.0.12", "10.0.0.11"} {
		if _, err := client.For[*v1.Node](cl.admin).Create(context.Background(), &v1.Node{Metadata: &v1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
			Status: &v1.NodeStatus{Addresses: []*v1.NodeAddress{{Type: "InternalIP", Address: ip}, {Type: "Hostname", Address: "n"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	wait.Eventually(t, 30*time.Second, "status.loadBalancer.ingress 10.0.0.11, 10.0.0.12", func() error {
		ing, err := client.For[*v1.Ingress](cl.admin).Get(context.Background(), "default", "web")
		if err != nil {
			return err
		}
		got := ing.GetStatus().GetLoadBalancer().GetIngress()
		if len(got) != 2 || got[0].GetIp() != "10.0.0.11" || got[1].GetIp() != "10.0.0.12" {
			return fmt.Errorf("status %v", ing.GetStatus())
		}
		return nil
	})
	cl.event("web", "Sync")
}

// The request reaches the endpoint with the client's headers (no
// Accept-Encoding added), X-Forwarded-* set, hop-by-hop headers dropped;
// an encoded answer goes back to the client as the endpoint encoded it.
func TestForwardedHeaders(t *testing.T) {
	cl := startCluster(t)
	cl.service("web", cl.backendFunc("web", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			io.WriteString(w, "not really gzip")
			return
		}
		fmt.Fprintf(w, "web accept-encoding=%q xff=%q xfh=%q xfp=%q x-hop=%q", r.Header.Get("Accept-Encoding"),
			r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Hop"))
	}))
	cl.apply(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  defaultBackend:
    service: {name: web, port: {number: 80}}
`)
	cl.eventually("web.example.com", "/", 200, "web ")
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	req, _ := http.NewRequest("GET", "http://"+cl.http+"/", nil)
	req.Host = "web.example.com"
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "dropped")
	_, body, _ := do(t, plain, req)
	if want := `web accept-encoding="" xff="127.0.0.1" xfh="web.example.com" xfp="http" x-hop=""`; body != want {
		t.Errorf("backend saw %s\nwant         %s", body, want)
	}
	req, _ = http.NewRequest("GET", "http://"+cl.http+"/gzip", nil)
	req.Host = "web.example.com"
	req.Header.Set("Accept-Encoding", "gzip")
	if _, body, h := do(t, plain, req); body != "not really gzip" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("encoded answer: %q with Content-Encoding %q, want it as the endpoint sent it", body, h.Get("Content-Encoding"))
	}
}

// Round robin over a Service's ready endpoints, and an endpoint change
// applied without a restart.
func TestBalancingAndEndpointChange(t *testing.T) {
	cl := startCluster(t)
	a, b := cl.backend("a"), cl.backend("b")
	cl.service("web", a, b)
	cl.apply(strings.ReplaceAll(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: rr
spec:
  rules:
  - http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
`, "\t", "  "))
	cl.eventually("any", "/", 200, "")
	seen := map[string]int{}
	for range 20 {
		_, body, _ := cl.get("any", "/")
		seen[strings.Fields(body)[0]]++
	}
	if seen["a"] != 10 || seen["b"] != 10 {
		t.Errorf("round robin over two endpoints: %v", seen)
	}
	if _, err := client.For[*v1.EndpointSlice](cl.admin).Delete(context.Background(), "default", "web-0", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "only b after a's slice is deleted", func() error {
		for range 4 {
			if _, body, _ := cl.get("any", "/"); !strings.HasPrefix(body, "b ") {
				return fmt.Errorf("got %q", body)
			}
		}
		return nil
	})
}

// A backend without endpoints, a missing Service and a missing port each
// answer 503 with a page saying why, and an Event on the Ingress says it.
func TestUnavailableBackends(t *testing.T) {
	cl := startCluster(t)
	cl.service("empty") // no slices
	cl.apply(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: broken
spec:
  rules:
  - host: broken.example.com
    http:
      paths:
      - path: /empty
        pathType: Prefix
        backend:
          service:
            name: empty
            port:
              number: 80
      - path: /missing
        pathType: Prefix
        backend:
          service:
            name: missing
            port:
              number: 80
      - path: /noport
        pathType: Prefix
        backend:
          service:
            name: empty
            port:
              number: 8443
`)
	for _, c := range []struct{ path, reason, text string }{
		{"/empty", "NoEndpoints", `Service &#34;default/empty&#34; does not have any active Endpoint`},
		{"/missing", "ServiceNotFound", `service &#34;default/missing&#34; not found`},
		{"/noport", "ServicePortNotFound", `service &#34;default/empty&#34; has no port 8443`},
	} {
		wait.Eventually(t, 20*time.Second, c.path+" answering 503 "+c.reason, func() error {
			code, body, h := cl.get("broken.example.com", c.path)
			if code != 503 || h.Get("X-Tugboat-Ingress-Reason") != c.reason || !strings.Contains(body, c.text) || !strings.Contains(body, "<h1>503 Service Unavailable</h1>") {
				return fmt.Errorf("got %d %s %q", code, h.Get("X-Tugboat-Ingress-Reason"), body)
			}
			return nil
		})
		ev := cl.event("broken", c.reason)
		if ev.GetType() != "Warning" || !strings.Contains(ev.GetMessage(), strings.ReplaceAll(c.text, "&#34;", `"`)) {
			t.Errorf("event %s: %s %q", c.reason, ev.GetType(), ev.GetMessage())
		}
	}
	// Many requests and rebuilds later, still one Event per problem.
	for range 30 {
		cl.get("broken.example.com", "/empty")
	}
	cl.c.Changed()
	evs, _, _ := client.For[*v1.Event](cl.admin).List(context.Background(), client.ListOptions{Namespace: "default"})
	for _, e := range evs {
		if e.GetReason() == "NoEndpoints" && e.GetCount() != 1 {
			t.Errorf("NoEndpoints reported %d times", e.GetCount())
		}
	}
	// Endpoints arrive: served at once.
	cl.slice("empty-0", "empty", cl.backend("now-ready"))
	cl.eventually("broken.example.com", "/empty", 200, "now-ready ")
	// No rule and no default backend: 404.
	if code, body, _ := cl.get("other.example.com", "/"); code != 404 || !strings.Contains(body, "no Ingress rule matches") {
		t.Errorf("unmatched: %d %q", code, body)
	}
}

// An endpoint that refuses connections answers 502, naming the endpoint
// the request was sent to and the Service, and counts as that Ingress's
// upstream error.
func TestUpstreamError(t *testing.T) {
	cl := startCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // nothing listens there any more: connections are refused
	cl.service("down", down)
	cl.apply(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: down
spec:
  rules:
  - host: down.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: down
            port:
              number: 80
`)
	want := "endpoint " + down + " of down:80 failed: dial tcp " + down + ": connect: connection refused"
	wait.Eventually(t, 20*time.Second, "down.example.com answering 502", func() error {
		code, body, h := cl.get("down.example.com", "/x")
		if code != 502 || h.Get("X-Tugboat-Ingress-Reason") != "UpstreamError" || !strings.Contains(body, want) {
			return fmt.Errorf("got %d %s %q", code, h.Get("X-Tugboat-Ingress-Reason"), body)
		}
		return nil
	})
	errs := testutil.ToFloat64(cl.c.metrics.upstreamErrors.WithLabelValues("default", "down"))
	bad := testutil.ToFloat64(cl.c.metrics.requests.WithLabelValues("default", "down", "502"))
	if errs < 1 || errs != bad {
		t.Errorf("upstream errors %v, requests answered 502 %v: want the same, at least 1", errs, bad)
	}
}

// Ingresses of another class, or without class when tugboat is not the
// default, are not served.
func TestOnlyOwnClass(t *testing.T) {
	cl := startCluster(t)
	cl.service("web", cl.backend("web"))
	cl.apply(`apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: theirs
spec:
  ingressClassName: nginx
  rules:
  - host: theirs.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ours
spec:
  rules:
  - host: ours.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
`)
	cl.eventually("ours.example.com", "/", 200, "web ")
	if code, _, _ := cl.get("theirs.example.com", "/"); code != 404 {
		t.Errorf("an nginx-class Ingress was served: %d", code)
	}
}

// A streaming response in flight keeps flowing while the rules and the
// endpoints change under it; new requests follow the new rules.
func TestRuleChangeKeepsStreams(t *testing.T) {
	cl := startCluster(t)
	release := make(chan struct{})
	streamer := cl.backendFunc("stream", func(w http.ResponseWriter, r *http.Request) {
		for i := range 6 {
			fmt.Fprintf(w, "chunk %d\n", i)
			w.(http.Flusher).Flush()
			if i == 2 && r.URL.Path == "/" {
				<-release
			}
		}
	})
	cl.service("stream", streamer)
	cl.service("next", cl.backend("next"))
	cl.apply(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: live
spec:
  rules:
  - host: live.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: stream
            port:
              number: 80
`)
	cl.eventually("live.example.com", "/probe", 200, "")
	req, _ := http.NewRequest("GET", "http://"+cl.http+"/", nil)
	req.Host = "live.example.com"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := r.ReadString('\n')
		if err != nil || line != fmt.Sprintf("chunk %d\n", i) {
			t.Fatalf("line %d: %q %v", i, line, err)
		}
	}
	// Move the rule to another Service and drop the stream's endpoints.
	if _, err := client.For[*v1.Ingress](cl.admin).Mutate(context.Background(), "default", "live", false, func(i *v1.Ingress) error {
		i.Spec.Rules[0].Http.Paths[0].Backend.Service.Name = "next"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.EndpointSlice](cl.admin).Delete(context.Background(), "default", "stream-0", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cl.eventually("live.example.com", "/", 200, "next ")
	close(release)
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "chunk 3\nchunk 4\nchunk 5\n" {
		t.Fatalf("the stream after the change: %q %v", rest, err)
	}
}
