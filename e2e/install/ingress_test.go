package install

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
)

// ingressManifest routes web.example.com to the quick-start Service and
// /missing to a Service that does not exist.
const ingressManifest = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
      - path: /missing
        pathType: Exact
        backend:
          service:
            name: no-such-service
            port:
              number: 80
`

// ingressThrough checks that the cluster's proxy serves an Ingress on the
// node's port 80 (the proxy's default --ingress-listen): after the quick
// start, a request with Host web.example.com reaches a pod of Service web
// on the node, a rule whose Service does not exist answers 503 with
// reason ServiceNotFound, a host without rule 404, and the Ingress's
// status.loadBalancer lists the node's address.
func ingressThrough(t *testing.T, ctx context.Context, config, dir, nodeName, nodeIP string) {
	t.Helper()
	mf := filepath.Join(dir, "ingress.yaml")
	if err := os.WriteFile(mf, []byte(ingressManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := tugctl(ctx, config, "apply", "-f", mf); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	get := func(host, path string) (*http.Response, string, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+nodeIP+path, nil)
		if err != nil {
			return nil, "", err
		}
		req.Host = host
		resp, err := hc.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}
	wait.Eventually(t, time.Minute, "web.example.com through the Ingress on "+nodeIP+":80", func() error {
		resp, body, err := get("web.example.com", "/hello")
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 || !strings.Contains(body, "node="+nodeName) || !strings.Contains(body, "path=/hello") {
			return fmt.Errorf("%d %q (reason %q)", resp.StatusCode, body, resp.Header.Get("X-Tugboat-Ingress-Reason"))
		}
		return nil
	})
	resp, body, err := get("web.example.com", "/missing")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Tugboat-Ingress-Reason") != "ServiceNotFound" {
		t.Errorf("/missing: %d reason %q %q, want 503 ServiceNotFound", resp.StatusCode, resp.Header.Get("X-Tugboat-Ingress-Reason"), body)
	}
	if resp, _, err := get("other.example.com", "/"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("a host without rule: %v %v, want 404", resp, err)
	}
	wait.Eventually(t, time.Minute, "the Ingress's status.loadBalancer", func() error {
		out, err := tugctl(ctx, config, "get", "ingress", "web", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != nodeIP {
			return fmt.Errorf("status.loadBalancer.ingress %q, want %s", out, nodeIP)
		}
		return nil
	})
}
