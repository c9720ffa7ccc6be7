package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// DefaultDemoImage is the image of the --demo workload: Tugboat's echo
// server, which `make up` puts on every node.
const DefaultDemoImage = "tugboat.local/echo:latest"

// demoName names the demo's Deployment and Service.
const demoName = "console-demo"

// demo is what the page narrates (GET /api/demo).
type demo struct {
	Namespace  string    `json:"namespace"`
	Deployment string    `json:"deployment"`
	Service    string    `json:"service"`
	Started    time.Time `json:"started"`
}

// startDemo applies the demo workload in ns (replacing an earlier one,
// so the flow is seen from the start) with the user's credentials.
func startDemo(ctx context.Context, c *client.Client, ns, image string) (*demo, error) {
	b, err := assets.ReadFile("assets/demo.yaml")
	if err != nil {
		return nil, err
	}
	objs, err := manifest.Decode("demo.yaml", bytes.ReplaceAll(b, []byte("image: IMAGE"), []byte("image: "+image)))
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		_, err := client.ForKind(c, o.Kind).Delete(ctx, ns, demoName, client.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("--demo: delete the earlier %s/%s: %w", o.Kind.Plural, demoName, err)
		}
	}
	// The garbage collector removes the earlier ReplicaSet and pods; the
	// new ones start from nothing, so the page tells the whole way.
	err = wait.Until(ctx, time.Minute, func(ctx context.Context) error {
		for _, o := range objs {
			if _, err := client.ForKind(c, o.Kind).Get(ctx, ns, demoName); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s/%s is still there (%v)", o.Kind.Plural, demoName, err)
			}
		}
		sel := client.ListOptions{Namespace: ns, LabelSelector: "app=" + demoName}
		if rss, _, err := client.For[*v1.ReplicaSet](c).List(ctx, sel); err != nil || len(rss) > 0 {
			return fmt.Errorf("the earlier demo's ReplicaSets are still there (%d, %v)", len(rss), err)
		}
		if pods, _, err := client.For[*v1.Pod](c).List(ctx, sel); err != nil || len(pods) > 0 {
			return fmt.Errorf("the earlier demo's pods are still there (%d, %v)", len(pods), err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--demo: %w", err)
	}
	for _, o := range objs {
		o.Object.GetMetadata().Namespace = ns
		if _, err := client.ForKind(c, o.Kind).Create(ctx, o.Object); err != nil {
			return nil, fmt.Errorf("--demo: create %s/%s: %w", o.Kind.Plural, demoName, err)
		}
	}
	return &demo{Namespace: ns, Deployment: demoName, Service: demoName, Started: time.Now()}, nil
}

func (s *server) serveDemo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	d := s.demo
	s.mu.Unlock()
	if d == nil {
		http.Error(w, "console: not started with --demo", http.StatusNotFound)
		return
	}
	writeJSON(w, d)
}
