package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// TestIngressThroughProxy: the whole proxy with --ingress-listen serves
// an Ingress in the node's namespace: a pod's request to the node's
// address on port 80 reaches the Service's pods by host and path,
// balanced over both, and the Ingress's status gets the node's address.
func TestIngressThroughProxy(t *testing.T) {
	nstest.RequireRoot(t)
	srv := apiservertest.Start(t)
	ctx := context.Background()
	l := nstest.NewLab(t, 3)
	for i, name := range []string{"pod1", "pod2"} {
		ln := l.Pods[i].Listen("tcp", ":8080")
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%s %s", name, r.URL.Path) })}
		go hs.Serve(ln)
		t.Cleanup(func() { hs.Close() })
	}
	if _, err := client.For[*v1.Node](srv.Client).Create(ctx, node("node-a", nstest.PodCIDR, nstest.NodeIP)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.Service](srv.Client).Create(ctx, service("web", 80)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.EndpointSlice](srv.Client).Create(ctx, endpoints("web", nstest.PodIP(0), nstest.PodIP(1))); err != nil {
		t.Fatal(err)
	}
	createIngress(t, srv.Client, "web.example.com", "/app")
	p := start(t, srv.Client, l, func(c *Config) { c.IngressListen = "0.0.0.0:80" })
	defer p.stop(t)

	client3 := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return l.Pods[2].Dial(network, addr, 2*time.Second)
		}}}
	get := func(host, path string) (int, string, error) {
		req, _ := http.NewRequest("GET", "http://"+nstest.NodeIP+path, nil)
		req.Host = host
		resp, err := client3.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	seen := map[string]bool{}
	wait.Eventually(t, 20*time.Second, "both pods answering web.example.com/app through the node's port 80", func() error {
		code, body, err := get("web.example.com", "/app/x")
		if err != nil {
			return err
		}
		if code != 200 || !strings.HasSuffix(body, " /app/x") {
			return fmt.Errorf("got %d %q", code, body)
		}
		seen[strings.Fields(body)[0]] = true
		if len(seen) < 2 {
			return fmt.Errorf("only %v so far", seen)
		}
		return nil
	})
	if code, _, err := get("web.example.com", "/other"); err != nil || code != 404 {
		t.Errorf("a path without rule: %d %v", code, err)
	}
	wait.Eventually(t, 30*time.Second, "status.loadBalancer with the node's address", func() error {
		ing, err := client.For[*v1.Ingress](srv.Client).Get(ctx, "default", "web")
		if err != nil {
			return err
		}
		if got := ing.GetStatus().GetLoadBalancer().GetIngress(); len(got) != 1 || got[0].GetIp() != nstest.NodeIP {
			return fmt.Errorf("status %v", ing.GetStatus())
		}
		return nil
	})
}

// createIngress creates the Ingress default/web: one Prefix rule, host
// and path, to the Service web's port http.
func createIngress(t testing.TB, c *client.Client, host, path string) {
	t.Helper()
	objs, err := manifest.Decode("ing.yaml", []byte(fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: default
spec:
  rules:
  - host: %s
    http:
      paths:
      - path: %s
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              name: http
`, host, path)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.Ingress](c).Create(context.Background(), objs[0].Object.(*v1.Ingress)); err != nil {
		t.Fatal(err)
	}
}
