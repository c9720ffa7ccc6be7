package services

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// TestServices runs the end-to-end checks on one three-node
// cluster: the web Deployment on node1 and node2 (node3 cordoned), the
// client pod on node3.
func TestServices(t *testing.T) {
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 3, Images: []string{"busybox", "echo"}})
	if !c.Scheduler || !c.ControllerManager {
		t.Fatalf("needs the scheduler and the controller-manager (Deployment and Endpoints controllers): %v", bins.Skipped)
	}
	ctx := ctxFor(t, 10*time.Minute)
	api := c.Client
	proxies := map[string]*proxy{}
	for _, n := range c.Nodes {
		proxies[n.Name] = startProxy(t, c, n)
	}
	t.Cleanup(func() {
		for _, p := range proxies {
			p.stop(t)
		}
		if t.Failed() {
			for _, p := range proxies {
				t.Logf("==== last lines of %s ====\n%s", p.log, tailFile(p.log, 40))
			}
		}
	})
	node3 := c.Node("node3")

	// Cordon node3: the Deployment lands on node1 and node2.
	if _, err := client.For[*v1.Node](api).Mutate(ctx, "", "node3", false, func(n *v1.Node) error {
		n.Spec.Unschedulable = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Both schedulable nodes Ready and untainted first, or the scheduler
	// may put every replica on the one that is (the node lifecycle
	// controller taints a node until its first Ready status).
	wait.Eventually(t, 2*time.Minute, "node1 and node2 Ready without taints", func() error {
		for _, name := range []string{"node1", "node2"} {
			n, err := client.For[*v1.Node](api).Get(ctx, "", name)
			if err != nil {
				return err
			}
			if len(n.Spec.Taints) > 0 || !nodeReady(n) {
				return fmt.Errorf("node %s: taints %v, conditions %v", name, n.Spec.Taints, n.Status.Conditions)
			}
		}
		return nil
	})
	if _, err := client.For[*v1.Deployment](api).Create(ctx, echoDeployment("web", 4)); err != nil {
		t.Fatal(err)
	}
	web, err := client.For[*v1.Service](api).Create(ctx, service("web", "", map[string]string{"app": "web"}, 80, "http"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.Pod](api).Create(ctx, busyboxPod("client", "node3", nil, "sleep 100000")); err != nil {
		t.Fatal(err)
	}
	waitPodReady(t, api, "client")
	wait.Eventually(t, 2*time.Minute, "4 ready web endpoints", func() error {
		eps, err := readyEndpoints(ctx, api, "web")
		if err != nil || len(eps) != 4 {
			return fmt.Errorf("web endpoints %v, %v", eps, err)
		}
		return nil
	})
	// The proxies program from the EndpointSlices: one slice, the same
	// four pods ready, each with its node.
	wait.Eventually(t, 30*time.Second, "web's EndpointSlice", func() error {
		list, _, err := client.For[*v1.EndpointSlice](api).List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "kubernetes.io/service-name=web"})
		if err != nil || len(list) != 1 {
			return fmt.Errorf("slices of web: %d, %v", len(list), err)
		}
		ready := 0
		for _, e := range list[0].Endpoints {
			if e.GetConditions().GetReady() && (e.GetNodeName() == "node1" || e.GetNodeName() == "node2") {
				ready++
			}
		}
		if ready != 4 || list[0].Ports[0].GetPort() != 8080 {
			return fmt.Errorf("web's slice: %d ready endpoints on node1/node2, ports %v", ready, list[0].Ports)
		}
		return nil
	})
	webPods := podsOf(t, api, "app=web")
	nodesUsed := map[string]int{}
	for _, p := range webPods {
		nodesUsed[p.Spec.NodeName]++
	}
	if len(nodesUsed) != 2 || nodesUsed["node3"] != 0 {
		t.Fatalf("the 4 web pods should spread over node1 and node2: %v", nodesUsed)
	}

	t.Run("http://web from node3, by the pod's resolv.conf, reaches every endpoint evenly", func(t *testing.T) {
		// Wait for node3's proxy to have all four endpoints.
		wait.Eventually(t, 30*time.Second, "node3's proxy balancing to all four endpoints", func() error {
			table, err := proxies["node3"].table(ctx)
			if err != nil {
				return err
			}
			for _, p := range webPods {
				if !strings.Contains(table, p.Status.PodIp+" . 8080") {
					return fmt.Errorf("node3's table lacks %s", p.Status.PodIp)
				}
			}
			return nil
		})
		counts := answers(t, api, "client", "web", 80, 200)
		t.Logf("answers over 200 requests: %v", counts)
		for _, p := range webPods {
			// 50 expected each; below 20 is more than 4 standard deviations off.
			if n := counts[p.Metadata.Name]; n < 20 {
				t.Errorf("pod %s on %s answered %d of 200", p.Metadata.Name, p.Spec.NodeName, n)
			}
		}
		if len(counts) != 4 {
			t.Errorf("answers from %d sources, want the 4 pods: %v", len(counts), counts)
		}
	})

	t.Run("pod to pod across nodes keeps the client's address (no NAT)", func(t *testing.T) {
		client, err := client.For[*v1.Pod](api).Get(ctx, "default", "client")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range webPods {
			script := fmt.Sprintf(`printf 'GET /client HTTP/1.0\r\n\r\n' | nc -w 3 %s 8080`, p.Status.PodIp)
			out, code := execIn(t, api, "default", "client", time.Minute, "sh", "-c", script)
			if code != 0 || !strings.Contains(out, "client="+client.Status.PodIp+"\n") {
				t.Errorf("client pod %s on node3 -> pod %s on %s: exit %d, answer %q; want client=%s (the node's masquerade rule must leave the cluster CIDR alone)",
					client.Status.PodIp, p.Status.PodIp, p.Spec.NodeName, code, out, client.Status.PodIp)
			}
		}
	})

	t.Run("an Ingress served by node3's proxy routes by host and path to web's pods on node1 and node2; no endpoints is 503 with an Event", func(t *testing.T) {
		if _, err := client.For[*v1.Service](api).Create(ctx, service("nobody", "", map[string]string{"app": "nobody"}, 80, "http")); err != nil {
			t.Fatal(err)
		}
		prefix, exact := "Prefix", "Exact"
		backend := func(svc string) *v1.IngressBackend {
			return &v1.IngressBackend{Service: &v1.IngressServiceBackend{Name: svc, Port: &v1.ServiceBackendPort{Number: 80}}}
		}
		if _, err := client.For[*v1.Ingress](api).Create(ctx, &v1.Ingress{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: &v1.IngressSpec{Rules: []*v1.IngressRule{{Host: "web.example.com", Http: &v1.HTTPIngressRuleValue{Paths: []*v1.HTTPIngressPath{
				{Path: "/", PathType: &prefix, Backend: backend("web")},
				{Path: "/none", PathType: &exact, Backend: backend("nobody")},
			}}}}}}); err != nil {
			t.Fatal(err)
		}
		get := func(path string) (int, string, error) {
			req, _ := http.NewRequest("GET", "http://"+node3.IP.String()+path, nil)
			req.Host = "web.example.com"
			resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b), nil
		}
		seen := map[string]bool{}
		wait.Eventually(t, time.Minute, "web.example.com/ through node3 answered by pods on both node1 and node2", func() error {
			code, body, err := get("/hello")
			if err != nil {
				return err
			}
			if code != 200 {
				return fmt.Errorf("%d %q", code, body)
			}
			for _, p := range webPods {
				if strings.Contains(body, "pod="+p.Metadata.Name) {
					seen[p.Spec.NodeName] = true
				}
			}
			if !seen["node1"] || !seen["node2"] {
				return fmt.Errorf("answered from nodes %v so far", seen)
			}
			return nil
		})
		code, body, err := get("/none")
		if err != nil || code != 503 || !strings.Contains(body, "does not have any active Endpoint") {
			t.Errorf("/none: %d %q %v", code, body, err)
		}
		wait.Eventually(t, 30*time.Second, "a NoEndpoints Event on the Ingress", func() error {
			evs, _, err := client.For[*v1.Event](api).List(ctx, client.ListOptions{Namespace: "default"})
			if err != nil {
				return err
			}
			for _, e := range evs {
				if e.GetInvolvedObject().GetKind() == "Ingress" && e.GetReason() == "NoEndpoints" && strings.Contains(e.GetMessage(), "default/nobody") {
					return nil
				}
			}
			return errors.New("none yet")
		})
	})

	t.Run("dig gets A and SRV records and NXDOMAIN", func(t *testing.T) {
		dig := func(args ...string) string {
			out, err := host(ctx, node3, "dig", append([]string{"@10.96.0.10", "+time=2", "+tries=1", "+noall", "+comments", "+answer"}, args...)...)
			if err != nil {
				t.Fatalf("dig %v: %v\n%s", args, err, out)
			}
			return strings.Join(strings.Fields(out), " ")
		}
		if out := dig("web.default.svc.cluster.local", "A"); !strings.Contains(out, "status: NOERROR") || !strings.Contains(out, "web.default.svc.cluster.local. 5 IN A "+web.Spec.ClusterIp) {
			t.Errorf("A: %s", out)
		}
		if out := dig("_http._tcp.web.default.svc.cluster.local", "SRV"); !strings.Contains(out, "IN SRV 0 100 80 web.default.svc.cluster.local.") {
			t.Errorf("SRV: %s", out)
		}
		if out := dig("nope.default.svc.cluster.local", "A"); !strings.Contains(out, "status: NXDOMAIN") {
			t.Errorf("wrong name: %s", out)
		}
		// And from inside a pod, with the pod's own resolv.conf: "web"
		// through the search path. (busybox nslookup also prints the
		// NXDOMAIN of the other search domains and so exits 1.)
		out, _ := execIn(t, api, "default", "client", time.Minute, "nslookup", "web")
		if !strings.Contains(out, "Name:\tweb.default.svc.cluster.local\nAddress: "+web.Spec.ClusterIp) {
			t.Errorf("nslookup web in the pod: %s", out)
		}
	})

	t.Run("a headless Service resolves to its pods, a StatefulSet-style pod by its own name; ExternalName is a CNAME", func(t *testing.T) {
		db := busyboxPod("db-0", "", map[string]string{"app": "db"}, "sleep 100000")
		db.Spec.Hostname, db.Spec.Subdomain = "db-0", "db"
		if _, err := client.For[*v1.Pod](api).Create(ctx, db); err != nil {
			t.Fatal(err)
		}
		headless := service("db", "", map[string]string{"app": "db"}, 5432, "5432")
		headless.Spec.ClusterIp = "None"
		if _, err := client.For[*v1.Service](api).Create(ctx, headless); err != nil {
			t.Fatal(err)
		}
		ext := &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "ext"},
			Spec: &v1.ServiceSpec{Type: "ExternalName", ExternalName: "db.default.svc.cluster.local"}}
		if _, err := client.For[*v1.Service](api).Create(ctx, ext); err != nil {
			t.Fatal(err)
		}
		ip := waitPodReady(t, api, "db-0").Status.PodIp
		dig := func(name, typ string) string {
			out, _ := host(ctx, node3, "dig", "@10.96.0.10", "+time=2", "+tries=1", "+noall", "+answer", name, typ)
			return strings.Join(strings.Fields(out), " ")
		}
		wait.Eventually(t, 30*time.Second, "the headless names on node3", func() error {
			for _, name := range []string{"db.default.svc.cluster.local.", "db-0.db.default.svc.cluster.local."} {
				if out := dig(name, "A"); out != name+" 5 IN A "+ip {
					return fmt.Errorf("%s A: %q, want %s", name, out, ip)
				}
			}
			if out := dig("_http._tcp.db.default.svc.cluster.local", "SRV"); !strings.Contains(out, "SRV 0 100 5432 db-0.db.default.svc.cluster.local.") {
				return fmt.Errorf("SRV: %q", out)
			}
			if out := dig("ext.default.svc.cluster.local", "A"); out != "ext.default.svc.cluster.local. 5 IN CNAME db.default.svc.cluster.local. db.default.svc.cluster.local. 5 IN A "+ip {
				return fmt.Errorf("ExternalName: %q", out)
			}
			return nil
		})
		// The pod's own name from another pod, through its cluster DNS
		// (busybox nslookup applies the search path only to names
		// without a dot).
		out, _ := execIn(t, api, "default", "client", time.Minute, "nslookup", "db-0.db.default.svc.cluster.local")
		if !strings.Contains(out, "Name:\tdb-0.db.default.svc.cluster.local\nAddress: "+ip) {
			t.Errorf("nslookup db-0.db.default.svc.cluster.local in the client pod: %s", out)
		}
	})

	t.Run("scale down: no request reaches the removed pod", func(t *testing.T) {
		if _, err := client.For[*v1.Deployment](api).Mutate(ctx, "default", "web", false, func(d *v1.Deployment) error {
			d.Spec.Replicas = ptr(int32(3))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var removed *v1.Pod
		wait.Eventually(t, time.Minute, "3 ready web endpoints", func() error {
			eps, err := readyEndpoints(ctx, api, "web")
			if err != nil || len(eps) != 3 {
				return fmt.Errorf("web endpoints %v, %v", eps, err)
			}
			for _, p := range webPods {
				if !slices.Contains(eps, p.Metadata.Name) {
					removed = p
				}
			}
			return nil
		})
		// Once node3's rules no longer hold it (the programming latency)...
		wait.Eventually(t, 30*time.Second, "node3's rules without the removed endpoint", func() error {
			table, err := proxies["node3"].table(ctx)
			if err != nil || strings.Contains(table, removed.Status.PodIp+" . 8080") {
				return fmt.Errorf("node3 still balances to %s (%v)", removed.Status.PodIp, err)
			}
			return nil
		})
		// ...no request reaches it.
		counts := answers(t, api, "client", "web", 80, 60)
		if counts[removed.Metadata.Name] != 0 || len(counts) != 3 {
			t.Errorf("after removing %s: %v", removed.Metadata.Name, counts)
		}
	})

	var np *v1.Service
	t.Run("NodePort answers on each node's address", func(t *testing.T) {
		np, err = client.For[*v1.Service](api).Create(ctx, service("web-np", "NodePort", map[string]string{"app": "web"}, 80, "http"))
		if err != nil {
			t.Fatal(err)
		}
		port := np.Spec.Ports[0].NodePort
		for _, n := range c.Nodes {
			url := "http://" + n.IP.String() + ":" + strconv.Itoa(int(port)) + "/"
			wait.Eventually(t, 30*time.Second, "NodePort "+url, func() error {
				body, err := httpGet(url)
				if err != nil || !strings.Contains(body, "pod=web-") {
					return fmt.Errorf("%s: %q %v", url, body, err)
				}
				return nil
			})
		}
	})

	t.Run("a Service without endpoints refuses at once", func(t *testing.T) {
		empty, err := client.For[*v1.Service](api).Create(ctx, service("empty", "", map[string]string{"app": "nobody"}, 80, "80"))
		if err != nil {
			t.Fatal(err)
		}
		wait.Eventually(t, 30*time.Second, "node3 rejecting the Service without endpoints", func() error {
			table, err := proxies["node3"].table(ctx)
			if err != nil || !strings.Contains(table, empty.Spec.ClusterIp+" . tcp . 80") {
				return fmt.Errorf("node3 does not reject %s yet (%v)", empty.Spec.ClusterIp, err)
			}
			return nil
		})
		out, _ := fetch(t, api, "client", "empty", 80)
		if !strings.Contains(out, "Connection refused") {
			t.Errorf("GET http://empty/: %q, want connection refused", out)
		}
	})

	t.Run("a pod reaches itself through its own Service", func(t *testing.T) {
		if _, err := client.For[*v1.Pod](api).Create(ctx, busyboxPod("self", "", map[string]string{"app": "self"},
			"mkdir -p /www && echo self-ok > /www/index.html && exec httpd -f -p 8080 -h /www")); err != nil {
			t.Fatal(err)
		}
		if _, err := client.For[*v1.Service](api).Create(ctx, service("self", "", map[string]string{"app": "self"}, 80, "8080")); err != nil {
			t.Fatal(err)
		}
		waitPodReady(t, api, "self")
		wait.Eventually(t, 30*time.Second, "self -> self through the ClusterIP (hairpin)", func() error {
			out, code := fetch(t, api, "self", "self", 80)
			if code != 0 || !strings.Contains(out, "\r\n\r\nself-ok") {
				return fmt.Errorf("self -> self: %d %q", code, out)
			}
			return nil
		})
	})

	t.Run("deleting a Service removes its rules and frees its ClusterIP", func(t *testing.T) {
		if _, err := client.For[*v1.Service](api).Delete(ctx, "default", "web-np", client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		nodePort := fmt.Sprintf("tcp . %d", np.Spec.Ports[0].NodePort)
		for _, p := range proxies {
			wait.Eventually(t, 30*time.Second, p.node.Name+"'s rules without web-np", func() error {
				table, err := p.table(ctx)
				if err != nil || strings.Contains(table, np.Spec.ClusterIp+" ") || strings.Contains(table, nodePort) || strings.Contains(table, "svc-default/web-np/") {
					return fmt.Errorf("%s still has web-np (%v)", p.node.Name, err)
				}
				return nil
			})
		}
		again := service("reuse", "", map[string]string{"app": "web"}, 80, "http")
		again.Spec.ClusterIp = np.Spec.ClusterIp
		if _, err := client.For[*v1.Service](api).Create(ctx, again); err != nil {
			t.Fatalf("the deleted Service's ClusterIP %s is not free: %v", np.Spec.ClusterIp, err)
		}
	})

	t.Run("restarting the proxy resyncs with no stale rules", func(t *testing.T) {
		p := proxies["node3"]
		p.stop(t)
		self, err := client.For[*v1.Service](api).Get(ctx, "default", "self")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.For[*v1.Service](api).Delete(ctx, "default", "self", client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		late, err := client.For[*v1.Service](api).Create(ctx, service("late", "", map[string]string{"app": "web"}, 80, "http"))
		if err != nil {
			t.Fatal(err)
		}
		proxies["node3"] = startProxy(t, c, node3)
		wait.Eventually(t, 30*time.Second, "node3's table after the restart", func() error {
			table, err := proxies["node3"].table(ctx)
			if err != nil {
				return err
			}
			if strings.Contains(table, self.Spec.ClusterIp+" ") || strings.Contains(table, "svc-default/self/") || !strings.Contains(table, late.Spec.ClusterIp+" . tcp . 80") {
				return fmt.Errorf("table after restart:\n%s", table)
			}
			return nil
		})
		if counts := answers(t, api, "client", "late", 80, 20); counts["FAILED"] != 0 || len(counts) == 0 {
			t.Errorf("late after restart: %v", counts)
		}
	})

	t.Run("proxy --cleanup leaves no table, route or address", func(t *testing.T) {
		p := proxies["node3"]
		p.stop(t)
		if out, err := node3.Host.Output(ctx, exec.Command(proxyBin, "--cleanup")); err != nil {
			t.Fatalf("proxy --cleanup: %v\n%s", err, out)
		}
		tables, _ := host(ctx, node3, "nft", "list", "tables")
		routes, _ := host(ctx, node3, "ip", "-4", "route", "show", "proto", "116")
		addrs, _ := host(ctx, node3, "ip", "-4", "addr", "show", "dev", "lo")
		proxyTable := false // the kubelet's own "tugboat-masq" stays
		for _, l := range strings.Split(tables, "\n") {
			proxyTable = proxyTable || strings.HasSuffix(strings.TrimSpace(l), " tugboat")
		}
		if proxyTable || strings.TrimSpace(routes) != "" || strings.Contains(addrs, "10.96.0.10") {
			t.Errorf("left after cleanup:\ntables: %s\nroutes: %s\nlo: %s", tables, routes, addrs)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func podsOf(t *testing.T, c *client.Client, selector string) []*v1.Pod {
	t.Helper()
	if _, err := labels.Parse(selector); err != nil {
		t.Fatal(err)
	}
	pods, _, err := client.For[*v1.Pod](c).List(context.Background(), client.ListOptions{Namespace: "default", LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.Pod
	for _, p := range pods {
		if p.Metadata.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func httpGet(url string) (string, error) {
	cl := &http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
