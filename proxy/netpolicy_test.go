package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// The Kubernetes documentation's policies, as users write them.
const (
	denyAllYAML = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: default-deny-ingress
spec:
  podSelector: {}
  policyTypes:
  - Ingress
`
	allowFrontendYAML = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-allow-frontend
spec:
  podSelector:
    matchLabels:
      app: web
  ingress:
  - from:
    - podSelector:
        matchLabels:
          role: frontend
    ports:
    - protocol: TCP
      port: 8080
`
)

func decodePolicy(t *testing.T, doc string) *v1.NetworkPolicy {
	t.Helper()
	objs, err := manifest.Decode("policy.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	np, ok := objs[0].Object.(*v1.NetworkPolicy)
	if !ok {
		t.Fatalf("decoded %T", objs[0].Object)
	}
	np.Metadata.Namespace = "default"
	return np
}

// TestNetworkPolicyThroughAPI: policies written to a real apiserver are
// enforced by the whole proxy on a node's pods, through a ClusterIP (the
// policy sees the endpoint after DNAT): deny-all blocks a connection that
// worked, an allow rule lets exactly the labelled pod through, deleting
// the policies restores traffic.
func TestNetworkPolicyThroughAPI(t *testing.T) {
	nstest.RequireRoot(t)
	srv := apiservertest.Start(t)
	ctx := context.Background()
	l := nstest.NewLab(t, 3)
	nstest.Serve(t, l.Pods[0], "web", ":8080")
	frontPod, otherPod := l.Pods[1], l.Pods[2]

	if _, err := client.For[*v1.Node](srv.Client).Create(ctx, node("node-a", nstest.PodCIDR, nstest.NodeIP)); err != nil {
		t.Fatal(err)
	}
	pods := client.For[*v1.Pod](srv.Client)
	for i, p := range []struct{ name, key, value string }{{"web", "app", "web"}, {"front", "role", "frontend"}, {"other", "role", "other"}} {
		created, err := pods.Create(ctx, &v1.Pod{Metadata: &v1.ObjectMeta{Namespace: "default", Name: p.name, Labels: map[string]string{p.key: p.value}},
			Spec: &v1.PodSpec{NodeName: "node-a", Containers: []*v1.Container{{Name: "c", Image: "busybox"}}}})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = &v1.PodStatus{Phase: "Running", PodIp: nstest.PodIP(i)}
		if _, err := pods.UpdateStatus(ctx, created); err != nil {
			t.Fatal(err)
		}
	}
	web, err := client.For[*v1.Service](srv.Client).Create(ctx, service("web", 80))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.EndpointSlice](srv.Client).Create(ctx, endpoints("web", nstest.PodIP(0))); err != nil {
		t.Fatal(err)
	}
	webAddr := web.Spec.ClusterIp + ":80"
	p := start(t, srv.Client, l)
	defer p.stop(t)

	reach := func(from *nstest.NS) error {
		c, err := from.Dial("tcp", webAddr, 700*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	}
	eventually := func(what string, front, other bool) time.Duration {
		t.Helper()
		start := time.Now()
		wait.Eventually(t, 15*time.Second, what, func() error {
			for _, c := range []struct {
				name string
				ns   *nstest.NS
				want bool
			}{{"front", frontPod, front}, {"other", otherPod, other}} {
				err := reach(c.ns)
				if c.want && err != nil {
					return errors.New(c.name + " -> web: " + err.Error())
				}
				if !c.want && err == nil {
					return errors.New(c.name + " -> web: got through")
				}
			}
			return nil
		})
		return time.Since(start)
	}
	eventually("both clients reaching web", true, true)

	nps := client.For[*v1.NetworkPolicy](srv.Client)
	deny, err := nps.Create(ctx, decodePolicy(t, denyAllYAML))
	if err != nil {
		t.Fatal(err)
	}
	if got := deny.GetSpec().GetPolicyTypes(); len(got) != 1 || got[0] != "Ingress" {
		t.Errorf("stored policyTypes %v", got)
	}
	eventually("deny-all blocking both", false, false)
	allow, err := nps.Create(ctx, decodePolicy(t, allowFrontendYAML))
	if err != nil {
		t.Fatal(err)
	}
	eventually("only role=frontend allowed", true, false)

	// A label change moves a pod in and out of the peers.
	if _, err := pods.Mutate(ctx, "default", "other", false, func(p *v1.Pod) error {
		p.Metadata.Labels["role"] = "frontend"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	eventually("other allowed once labelled role=frontend", true, true)

	for _, np := range []*v1.NetworkPolicy{deny, allow} {
		if _, err := nps.Delete(ctx, "default", np.Metadata.Name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	took := eventually("both reaching web after the policies were deleted", true, true)
	t.Logf("traffic restored %v after the deletes", took)
}
