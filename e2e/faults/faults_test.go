package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// eventTTL is the apiserver's --event-ttl in this test: short enough to
// see an Event expire, long enough for each case to read its own events.
const eventTTL = 60 * time.Second

// TestFaultCatalogue injects one fault per case into one shared cluster
// and checks that tugctl names the layer and the reason, and that a metric
// counts the fault. The pod-level faults are created together (they do not
// disturb each other); CNI and the stopped kubelet, which take a node out,
// run one after the other at the end.
func TestFaultCatalogue(t *testing.T) {
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 3, Images: []string{"busybox", "echo"},
		APIServerArgs: []string{"--event-ttl", eventTTL.String()}})
	if !c.Scheduler || !c.ControllerManager {
		t.Fatalf("needs the scheduler and the controller-manager: %v", bins.Skipped)
	}
	startProxies(t, c)
	k := tugctl{c}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	api := c.Client
	create := func(obj v1.Object) {
		t.Helper()
		if _, err := client.ForKind(api, mustKind(t, obj)).Create(ctx, obj); err != nil {
			t.Fatalf("create %s: %v", obj.GetMetadata().GetName(), err)
		}
	}
	kubeletOf := func(node string) string {
		if n := c.Node(node); n != nil {
			return n.MetricsAddr
		}
		t.Fatalf("no node %q", node)
		return ""
	}

	// An Event written now must be gone after the TTL; a watch started
	// now must print the events the faults cause.
	ttlProbe := &v1.Event{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "ttl-probe"},
		InvolvedObject: &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "ghost"},
		Reason:         "Probe", Message: "written to expire", Type: "Normal", Count: 1,
		FirstTimestamp: timestamppb.Now(), LastTimestamp: timestamppb.Now()}
	create(ttlProbe)
	ttlWritten := time.Now()
	// One written at the same time but updated every 20s (as a repeating
	// event's count is) must outlive it: the TTL counts from the last write.
	kept := proto.Clone(ttlProbe).(*v1.Event)
	kept.Metadata.Name, kept.Message = "ttl-kept", "updated to stay"
	create(kept)
	keepCtx, stopKeeping := context.WithCancel(ctx)
	defer stopKeeping()
	go func() {
		for sleepCtx(keepCtx, 20*time.Second) {
			_, _ = client.For[*v1.Event](api).Mutate(keepCtx, "default", "ttl-kept", false, func(e *v1.Event) error {
				e.Count++
				e.LastTimestamp = timestamppb.Now()
				return nil
			})
		}
	}()
	watch := k.start(t, "get", "events", "-w")
	wait.Eventually(t, 30*time.Second, "get events -w lists the probe event", func() error {
		if !strings.Contains(watch.String(), "written to expire") {
			return fmt.Errorf("output so far:\n%s", watch.String())
		}
		return nil
	})

	// The pod-level faults, all at once.
	hog := busybox("cpu-hog", nil, "sleep 100000")
	hog.Spec.Containers[0].Resources = &v1.ResourceRequirements{Requests: map[string]string{"cpu": "1000"}}
	create(hog)
	picky := busybox("picky", nil, "sleep 100000")
	picky.Spec.NodeSelector = map[string]string{"disktype": "ssd"}
	create(picky)
	noImage := busybox("no-image", nil, "sleep 100000")
	noImage.Spec.Containers[0].Image = "127.0.0.1:5/tugboat/not-imported:1" // no registry there: the image is only on no node
	create(noImage)
	create(busybox("crasher", nil, "echo starting; sleep 1; echo boom >&2; exit 3"))
	live := busybox("unlively", nil, "sleep 100000")
	live.Spec.Containers[0].LivenessProbe = execProbe("cat", "/tmp/healthy")
	create(live)
	notReady := busybox("unready", map[string]string{"app": "unready"}, "sleep 100000")
	notReady.Spec.Containers[0].ReadinessProbe = execProbe("cat", "/tmp/ready")
	create(notReady)
	create(service("unready", map[string]string{"app": "unready"}))
	create(service("nomatch", map[string]string{"app": "nomatch"}))
	create(echoDeployment("web", 2, 0))
	create(service("web", map[string]string{"app": "web"}))
	wrongPort := service("wrongport", map[string]string{"app": "web"})
	wrongPort.Spec.Ports[0].TargetPort = "9090" // the echo pods listen on 8080
	create(wrongPort)
	create(busybox("client", nil, "sleep 100000"))

	t.Run("unschedulable: insufficient cpu", func(t *testing.T) {
		k.waitTrace(t, time.Minute, "pod", "cpu-hog", "scheduled", "scheduler", "Unschedulable", "Insufficient cpu")
		waitMetric(t, c.MetricsAddrs["scheduler"], "tugboat_scheduler_schedule_attempts_total", 1, "result=unschedulable")
		waitMetric(t, c.MetricsAddrs["scheduler"], "tugboat_events_recorded_total", 1, "reason=FailedScheduling")
	})
	t.Run("unschedulable: a nodeSelector no node has", func(t *testing.T) {
		r := k.waitTrace(t, time.Minute, "pod", "picky", "scheduled", "scheduler", "Unschedulable", "didn't match Pod's node affinity/selector")
		if r.Component != "scheduler" || !strings.Contains(r.Hint, "tugctl describe nodes") {
			t.Errorf("trace: %s", r)
		}
		out, err := k.run("describe", "pod", "picky")
		if err != nil {
			t.Fatal(err)
		}
		assertContains(t, "describe pod picky", out, "Node-Selectors: disktype=ssd", "Warning FailedScheduling ", "0/3 nodes are available")
	})
	t.Run("image not on the node", func(t *testing.T) {
		r := waitTraceAny(t, k, "pod", "no-image", "images", "kubelet+runtime", []string{"ErrImagePull", "ImagePullBackOff"})
		if !strings.Contains(r.Hint, "tugctl image import") || r.Node == "" {
			t.Errorf("trace: %s", r)
		}
		waitMetric(t, kubeletOf(r.Node), "tugboat_kubelet_image_pulls_total", 1, "result=failure")
	})
	t.Run("crash loop", func(t *testing.T) {
		r := k.waitTrace(t, 90*time.Second, "pod", "crasher", "running", "kubelet+runtime", "CrashLoopBackOff", "exits with code 3")
		if !strings.Contains(r.Hint, "tugctl logs crasher --previous") {
			t.Errorf("trace: %s", r)
		}
		logText(t, k, "trace", "pod", "crasher")
		waitMetric(t, kubeletOf(r.Node), "tugboat_kubelet_container_restarts_total", 1)
		waitMetric(t, kubeletOf(r.Node), "tugboat_events_recorded_total", 1, "reason=BackOff")
		// Every back-off is one Event, aggregated: describe shows one
		// BackOff line with its count.
		wait.Eventually(t, time.Minute, "one aggregated BackOff line", func() error {
			out, err := k.run("describe", "pod", "crasher")
			if err != nil {
				return err
			}
			lines := regexp.MustCompile(`(?m)^.*BackOff.*$`).FindAllString(out, -1)
			if len(lines) != 1 || !regexp.MustCompile(`\(x[2-9]\d* over `).MatchString(lines[0]) {
				return fmt.Errorf("BackOff lines %q in:\n%s", lines, out)
			}
			return nil
		})
	})
	t.Run("failing liveness probe", func(t *testing.T) {
		r := k.waitTrace(t, 90*time.Second, "pod", "unlively", "running", "kubelet+runtime", "LivenessProbeFailed", "Liveness probe failed")
		if r.Component != "kubelet (probes)" {
			t.Errorf("trace: %s", r)
		}
		waitMetric(t, kubeletOf(r.Node), "tugboat_kubelet_probe_results_total", 1, "kind=liveness", "result=failure")
	})
	t.Run("failing readiness probe: Ready False, no endpoint", func(t *testing.T) {
		r := k.waitTrace(t, time.Minute, "pod", "unready", "ready", "kubelet+runtime", "ReadinessProbeFailed", "Readiness probe failed")
		waitMetric(t, kubeletOf(r.Node), "tugboat_kubelet_probe_results_total", 1, "kind=readiness", "result=failure")
		s := k.waitTrace(t, time.Minute, "service", "unready", "endpoints", "endpoints", "NoReadyEndpoints", "unready: ContainersNotReady")
		if s.Component != "kubelet (probes)" {
			t.Errorf("trace service: %s", s)
		}
		out, err := k.run("describe", "service", "unready")
		if err != nil {
			t.Fatal(err)
		}
		assertContains(t, "describe service unready", out, "Endpoints: <none> (1 pod(s) match the selector, none is ready", "NotReadyEndpoints: ")
	})
	t.Run("a Service whose selector matches no pod", func(t *testing.T) {
		r := k.waitTrace(t, time.Minute, "service", "nomatch", "endpoints", "endpoints", "NoMatchingPods", "selector app=nomatch matches no pod in namespace default")
		if r.Component != "Service's selector" {
			t.Errorf("trace: %s", r)
		}
		// Every node refuses its ClusterIP, and its proxy counts it.
		datapath := 0
		for _, h := range r.Hops {
			if h.Hop != "datapath" {
				continue
			}
			datapath++
			if h.Status != "done" || !strings.Contains(h.Title, "refused (no ready endpoint)") {
				t.Errorf("datapath hop: %+v", h)
			}
		}
		if datapath != len(c.Nodes) {
			t.Errorf("%d datapath hops for %d nodes: %s", datapath, len(c.Nodes), r)
		}
		logText(t, k, "trace", "svc", "nomatch")
		out, err := k.run("describe", "svc", "nomatch")
		if err != nil {
			t.Fatal(err)
		}
		assertContains(t, "describe svc nomatch", out, "Endpoints: <none> (selector app=nomatch matches no pod in namespace default")
		for _, n := range c.Nodes {
			waitMetric(t, metricsAddrOfProxy(n), "tugboat_proxy_service_ports_without_endpoints", 1)
		}
	})
	t.Run("a Service whose targetPort nothing listens on", func(t *testing.T) {
		// Its endpoints are ready (the pods are), but each node's
		// connections to the ClusterIP and to the endpoints directly are
		// refused: the endpoints are at fault, not the datapath.
		r := k.waitTrace(t, time.Minute, "service", "wrongport", "datapath", "endpoints", "EndpointsRefuse",
			"and so do its endpoints asked directly")
		if r.Component != "Service's targetPort" || !strings.Contains(r.Message, ":9090") {
			t.Errorf("trace: %s", r)
		}
		logText(t, k, "trace", "svc", "wrongport")
	})
	t.Run("a DNS name with a typo: NXDOMAIN", func(t *testing.T) {
		// The healthy path first: DNS, rules on every node, endpoints.
		wait.Eventually(t, 2*time.Minute, "trace service web all done", func() error {
			r, err := k.trace("service", "web")
			if err != nil {
				return err
			}
			if !r.OK || len(r.Hops) != 7 {
				return fmt.Errorf("trace web: %s", r)
			}
			return nil
		})
		// A pod asks for the misspelt name...
		clientPod := waitRunning(t, api, "client")
		wait.Eventually(t, time.Minute, "nslookup wbe from the client pod says NXDOMAIN", func() error {
			out, err := k.run("exec", "client", "--", "sh", "-c", "nslookup wbe.default.svc.cluster.local; true")
			if err != nil {
				return err
			}
			if !strings.Contains(out, "NXDOMAIN") && !strings.Contains(out, "can't find") {
				return fmt.Errorf("nslookup: %s", out)
			}
			return nil
		})
		waitMetric(t, metricsAddrOfProxy(c.Node(clientPod.Spec.NodeName)), "tugboat_proxy_dns_queries_total", 1, "rcode=NXDOMAIN")
		// ...and trace names DNS, the reason, and what was meant.
		r := k.waitTrace(t, 30*time.Second, "service", "wbe", "dns", "DNS", "NXDOMAIN", "did you mean web?")
		if r.Summary != "no such Service" {
			t.Errorf("trace: %s", r)
		}
	})
	t.Run("top nodes and pods: use from the kubelets beside requests", func(t *testing.T) {
		out, err := k.run("top", "nodes")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Nodes {
			row := regexp.MustCompile(`(?m)^` + n.Name + ` +(\S+) +(\S+)%`).FindStringSubmatch(out)
			if row == nil || row[1] == "<unknown>" {
				t.Errorf("top nodes: no usage for %s:\n%s", n.Name, out)
			}
		}
		out, err = k.run("top", "pods", "client")
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^client +\d+m? +0 +0 +\d+(Ki|Mi)? +0 +0 +node\d\n`).MatchString(out) {
			t.Errorf("top pods client:\n%s", out)
		}
	})
	t.Run("get events -w streamed the faults' events", func(t *testing.T) {
		wait.Eventually(t, 30*time.Second, "the watch printed new events", func() error {
			out := watch.String()
			for _, want := range []string{"FailedScheduling", "BackOff", "Unhealthy"} {
				if !strings.Contains(out, want) {
					return fmt.Errorf("no %s in:\n%s", want, out)
				}
			}
			return nil
		})
	})

	// Node-level faults, one at a time: each takes a node out.
	for _, name := range []string{"cpu-hog", "picky", "no-image", "crasher", "unlively", "unready", "client"} {
		zero := int64(0)
		_, _ = client.For[*v1.Pod](api).Delete(ctx, "default", name, client.DeleteOptions{GracePeriodSeconds: &zero})
	}
	t.Run("CNI broken on one node", func(t *testing.T) {
		n := c.Node("node3")
		broken := filepath.Join(n.CNIConfDir, "00-broken.conflist")
		if err := os.WriteFile(broken, []byte(`{"cniVersion": "1.0.0", "name": "broken", "plugins": [{"type": "no-such-plugin"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		defer func() {
			os.Remove(broken)
			if err := n.WaitReady(ctxFor(t, time.Minute)); err != nil {
				t.Error(err)
			}
		}()
		if err := n.WaitReadyCondition(ctxFor(t, 30*time.Second), "False", "NetworkPluginNotReady"); err != nil {
			t.Fatal(err)
		}
		p := busybox("on-broken-node", nil, "sleep 100000")
		p.Spec.NodeName = "node3"
		p.Spec.Tolerations = []*v1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute"}}
		create(p)
		r := waitTraceAny(t, k, "pod", "on-broken-node", "sandbox", "CNI", []string{"NetworkNotReady", "FailedCreatePodSandbox"})
		if r.Component != "CNI" || r.Node != "node3" || !strings.Contains(r.Message, "no-such-plugin") {
			t.Errorf("trace: %s", r)
		}
		out, err := k.run("describe", "node", "node3")
		if err != nil {
			t.Fatal(err)
		}
		assertContains(t, "describe node node3", out, "Ready False ", "NetworkPluginNotReady", "no-such-plugin")
		waitMetric(t, n.MetricsAddr, "tugboat_events_recorded_total", 1, "reason=FailedCreatePodSandbox")
	})
	t.Run("a node whose kubelet stopped: NotReady, pods evicted and replaced", func(t *testing.T) {
		// Tolerating the unreachable taint for 20s leaves time to trace a
		// pod on the lost node before it is evicted.
		create(echoDeployment("survivor", 3, 20))
		var victim *v1.Pod
		wait.Eventually(t, 2*time.Minute, "3 survivor pods Ready", func() error {
			pods, _, err := client.For[*v1.Pod](api).List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=survivor"})
			if err != nil {
				return err
			}
			ready := 0
			for _, p := range pods {
				if isReady(p) {
					ready++
					if victim == nil || p.Spec.NodeName != "node1" {
						victim = p
					}
				}
			}
			if ready != 3 {
				return fmt.Errorf("%d ready", ready)
			}
			return nil
		})
		lost := c.Node(victim.Spec.NodeName)
		lost.Stop()
		defer func() {
			if err := lost.Start(); err != nil {
				t.Error(err)
			}
		}()
		r := k.waitTrace(t, time.Minute, "pod", victim.Metadata.Name, "ready", "kubelet+runtime", "NodeStatusUnknown", "Kubelet stopped posting node status")
		if r.Component != "kubelet" || r.Node != lost.Name {
			t.Errorf("trace: %s", r)
		}
		out, err := k.run("describe", "node", lost.Name)
		if err != nil {
			t.Fatal(err)
		}
		assertContains(t, "describe node "+lost.Name, out, "Ready Unknown ", "NodeStatusUnknown", "node.kubernetes.io/unreachable:NoExecute")
		wait.Eventually(t, 2*time.Minute, "the lost node's pods evicted and replaced elsewhere", func() error {
			pods, _, err := client.For[*v1.Pod](api).List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=survivor"})
			if err != nil {
				return err
			}
			ready := 0
			for _, p := range pods {
				if p.Spec.NodeName == lost.Name {
					return fmt.Errorf("pod %s still on %s", p.Metadata.Name, lost.Name)
				}
				if isReady(p) {
					ready++
				}
			}
			if ready != 3 {
				return fmt.Errorf("%d replacements ready", ready)
			}
			return nil
		})
		waitMetric(t, c.MetricsAddrs["controller-manager"], "tugboat_controller_manager_node_evictions_total", 1)
	})

	t.Run("disk pressure: best-effort pods evicted first", func(t *testing.T) {
		for _, d := range []string{"web", "survivor"} {
			_, _ = client.For[*v1.Deployment](api).Delete(ctx, "default", d, client.DeleteOptions{})
		}
		n := c.Node("node1")
		be := busybox("best-effort", nil, "sleep 100000")
		gu := busybox("guaranteed", nil, "sleep 100000")
		gu.Spec.Containers[0].Resources = &v1.ResourceRequirements{
			Requests: map[string]string{"cpu": "100m", "memory": "64Mi"}, Limits: map[string]string{"cpu": "100m", "memory": "64Mi"}}
		for _, p := range []*v1.Pod{gu, be} {
			p.Spec.NodeName = n.Name
			create(p)
			waitRunning(t, api, p.Metadata.Name)
		}
		// A threshold every file system crosses: the kubelet restarts
		// under disk pressure.
		n.Stop()
		n.ExtraArgs = []string{"--eviction-hard", "nodefs.available<100%"}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			n.Stop()
			n.ExtraArgs = nil
			if err := n.Start(); err != nil {
				t.Error(err)
			}
			if err := n.WaitReady(ctxFor(t, time.Minute)); err != nil {
				t.Error(err)
			}
		}()
		r := k.waitTrace(t, time.Minute, "pod", "best-effort", "running", "kubelet+runtime", "Evicted",
			"The node was low on resource: ephemeral-storage (nodefs)")
		if r.Component != "kubelet" {
			t.Errorf("trace: %s", r)
		}
		// The guaranteed pod goes after the best-effort one.
		evictedAt := func(pod string) (time.Time, error) {
			evs, _, err := client.For[*v1.Event](api).List(ctx, client.ListOptions{Namespace: "default",
				FieldSelector: "involvedObject.name=" + pod + ",reason=Evicted"})
			if err != nil || len(evs) == 0 {
				return time.Time{}, fmt.Errorf("no Evicted event for %s (%v)", pod, err)
			}
			return evs[0].GetFirstTimestamp().AsTime(), nil
		}
		wait.Eventually(t, time.Minute, "the guaranteed pod evicted after the best-effort one", func() error {
			tb, err := evictedAt("best-effort")
			if err != nil {
				return err
			}
			tg, err := evictedAt("guaranteed")
			if err != nil {
				return err
			}
			if !tb.Before(tg) {
				return fmt.Errorf("best-effort evicted at %s, guaranteed at %s", tb, tg)
			}
			return nil
		})
		out, err := k.run("describe", "node", n.Name)
		if err != nil {
			t.Fatal(err)
		}
		assertContains(t, "describe node", out, "DiskPressure True ", "KubeletHasDiskPressure", "nodefs.available")
		waitMetric(t, n.MetricsAddr, "tugboat_kubelet_pressure_evictions_total", 2, "signal=nodefs.available")
	})

	t.Run("events older than the TTL disappear", func(t *testing.T) {
		// The TTL counts from the last write; etcd leases are shared for
		// up to a minute, so an event lives at most TTL + 1m.
		wait.Eventually(t, time.Until(ttlWritten.Add(2*eventTTL+30*time.Second)), "the probe event expired", func() error {
			_, err := client.For[*v1.Event](api).Get(ctx, "default", "ttl-probe")
			if err == nil {
				return fmt.Errorf("ttl-probe still there %s after it was written", time.Since(ttlWritten).Round(time.Second))
			}
			return nil
		})
		if time.Since(ttlWritten) < eventTTL {
			t.Errorf("the event expired after %s, before the TTL %s", time.Since(ttlWritten), eventTTL)
		}
		// The one kept updated is still there.
		if e, err := client.For[*v1.Event](api).Get(ctx, "default", "ttl-kept"); err != nil || e.Count < 2 {
			t.Errorf("the event updated every 20s: %v, %v", e, err)
		}
	})
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// logText logs a command's table output, for the record.
func logText(t *testing.T, k tugctl, args ...string) {
	t.Helper()
	out, err := k.run(args...)
	if err != nil {
		t.Error(err)
	}
	t.Logf("tugctl %s:\n%s", strings.Join(args, " "), out)
}

// waitTraceAny is waitTrace accepting any of several reasons.
func waitTraceAny(t *testing.T, k tugctl, kind, name, stuckAt, layer string, reasons []string) traceReport {
	t.Helper()
	var r traceReport
	wait.Eventually(t, time.Minute, fmt.Sprintf("trace %s %s stuck at %s, layer %s, reason one of %v", kind, name, stuckAt, layer, reasons), func() error {
		var err error
		if r, err = k.trace(kind, name); err != nil {
			return err
		}
		for _, reason := range reasons {
			if !r.OK && r.StuckAt == stuckAt && r.Layer == layer && r.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("got %s", r)
	})
	return r
}

func isReady(p *v1.Pod) bool {
	for _, c := range p.GetStatus().GetConditions() {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

func waitRunning(t *testing.T, api *client.Client, name string) *v1.Pod {
	t.Helper()
	var p *v1.Pod
	wait.Eventually(t, time.Minute, name+" running", func() error {
		var err error
		p, err = client.For[*v1.Pod](api).Get(context.Background(), "default", name)
		if err != nil {
			return err
		}
		if p.GetStatus().GetPhase() != "Running" {
			return fmt.Errorf("phase %s", p.GetStatus().GetPhase())
		}
		return nil
	})
	return p
}

// assertContains checks that out, with runs of spaces collapsed, holds
// every want.
func assertContains(t *testing.T, what, out string, want ...string) {
	t.Helper()
	norm := regexp.MustCompile(` +`).ReplaceAllString(out, " ")
	for _, w := range want {
		if !strings.Contains(norm, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

func mustKind(t *testing.T, obj v1.Object) *kinds.Kind {
	t.Helper()
	k, err := kinds.ForMessage(obj)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
