package console

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
)

// web is the Deployment the tests apply: three busybox pods serving
// HTTP, ready while /tmp/ready exists (so a test can flip one's
// readiness with tugctl exec).
var webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: ` + images.BusyboxRef + `
        imagePullPolicy: IfNotPresent
        command: [sh, -c, "touch /tmp/ready; mkdir -p /www; echo hi > /www/index.html; exec httpd -f -p 8080 -h /www"]
        ports: [{containerPort: 8080}]
        readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

// The creation flow's stages, in order (console's flow.go).
var stageOrder = []string{"apply", "apiserver", "etcd", "controllers", "scheduler", "kubelet", "CNI", "runtime", "Running", "status"}

// TestConsole runs the browser checks on one two-node cluster,
// in order: the console loads; a Deployment's pods appear on their nodes
// and turn Running; a pod's creation flow, an unschedulable pod's and a
// missing image's; the Service's endpoints as readiness flips; a
// view-only user's console; a console beyond loopback.
func TestConsole(t *testing.T) {
	if _, err := chromiumPath(); err != nil {
		containerdtest.SkipOrFail(t, err)
	}
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 2, Images: []string{"busybox"}})
	if !c.Scheduler || !c.ControllerManager {
		t.Fatalf("needs the scheduler and the controller-manager: %v", bins.Skipped)
	}
	waitNodesSchedulable(t, c, "node1", "node2")
	admin := certCreds(c.Server, c.PKIDir(), "admin")
	con := startConsole(t, admin, "--listen", "127.0.0.1:0",
		"--metrics", "apiserver=http://"+c.MetricsAddrs["apiserver"]+"/metrics")
	b := newBrowser(t)
	b.open(con.URL)
	b.waitFor("the feed live with both nodes", `(() => {
		const conn = document.querySelector("#conn").textContent;
		if (!conn.startsWith("live")) return "status line: " + conn;
		const nodes = [...document.querySelectorAll("#nodes section.node")].map((s) => s.dataset.node + ": " + s.querySelector("h3").textContent);
		return ["node1", "node2"].every((n) => nodes.some((x) => x.startsWith(n + ": " + n + "✓ Ready"))) ? "" : "node panels: " + nodes.join(" | ");
	})()`, pageTimeout)
	b.screenshot("loaded")

	var webPod string
	t.Run("deployment: three chips appear and turn Running, each on its node", func(t *testing.T) {
		b := b.with(t)
		tugctl(t, admin, webManifest, "apply", "-f", "-")
		b.waitFor("three web chips Running and ready", `(() => {
			const chips = [...document.querySelectorAll("#nodes .chip")].filter((c) => /^default\/web-/.test(c.dataset.pod));
			const say = chips.map((c) => c.dataset.pod + " [" + c.textContent + "] in " + c.closest("section.node").dataset.node).join(", ");
			if (chips.length !== 3) return chips.length + " web chips: " + say;
			const ok = (c) => c.dataset.status === "Running" && c.classList.contains("s-ok") && c.textContent.startsWith("✓") &&
				c.dataset.node !== "" && c.closest("section.node").dataset.node === c.dataset.node;
			return chips.every(ok) ? "" : "not all Running on their nodes: " + say;
		})()`, podTimeout)
		b.screenshot("web-running")
		// Each chip sits in the panel of the node the API says.
		var panelOf map[string]string
		b.value(`Object.fromEntries([...document.querySelectorAll("#nodes .chip")].map((c) => [c.dataset.pod, c.closest("section.node").dataset.node]))`, &panelOf)
		pods, _, err := client.For[*v1.Pod](c.Client).List(context.Background(), client.ListOptions{Namespace: "default", LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 3 {
			t.Fatalf("%d web pods in the API", len(pods))
		}
		for _, p := range pods {
			key := "default/" + p.GetMetadata().GetName()
			if got, want := panelOf[key], p.GetSpec().GetNodeName(); got != want || want == "" {
				t.Errorf("chip %s in the panel of %q, the pod is on %q", key, got, want)
			}
		}
		names := make([]string, 0, len(pods))
		for _, p := range pods {
			names = append(names, p.GetMetadata().GetName())
		}
		sort.Strings(names)
		webPod = names[0]
	})
	if webPod == "" {
		t.FailNow()
	}

	t.Run("keyboard: an arrow moves to the next chip, Enter opens its flow", func(t *testing.T) {
		b := b.with(t)
		var keys []string
		b.value(`(() => { const cs = [...document.querySelectorAll("#nodes .chip:not([hidden])")]; cs[0].focus(); return cs.slice(0, 2).map((c) => c.dataset.pod); })()`, &keys)
		if len(keys) < 2 {
			t.Fatalf("chips %v, want at least two", keys)
		}
		b.run("ArrowRight", chromedp.KeyEvent(kb.ArrowRight))
		b.waitFor("the focus on the second chip", `(() => {
			const a = document.activeElement;
			return a?.dataset.pod === `+jsString(keys[1])+` && a.tabIndex === 0 ? "" : "focus on " + (a?.dataset.pod ?? a?.tagName);
		})()`, pageTimeout)
		b.run("Enter", chromedp.KeyEvent(kb.Enter))
		b.waitFor("the flow of "+keys[1], `location.hash === "#/pod/`+keys[1]+`" ? "" : "route " + location.hash`, pageTimeout)
		b.run("back to the cluster view (key 1)", chromedp.KeyEvent("1"))
		b.waitFor("the cluster view", `location.hash === "#/cluster" && !document.querySelector("#view-cluster").hidden ? "" : "route " + location.hash`, pageTimeout)
	})

	t.Run("creation flow: every stage lit in order with times", func(t *testing.T) {
		b := b.with(t)
		key := "default/" + webPod
		b.clickChip(key)
		b.waitFor("the creation flow of "+key+" done", `(() => {
			if (location.hash !== "#/pod/`+key+`") return "route " + location.hash;
			const st = [...document.querySelectorAll("#pod-flow g.stage")];
			const say = st.map((g) => g.dataset.stage + "=" + g.dataset.status + (g.dataset.time ? "@" + g.dataset.time : "")).join(", ");
			if (st.length !== 10) return st.length + " stages: " + say;
			if (!st.every((g) => g.dataset.status === "done" && g.dataset.time)) return "not every stage done with a time: " + say;
			const f = document.querySelector("#pod-finding");
			if (f.hidden || !f.classList.contains("ok")) return "finding: " + f.textContent;
			return document.querySelectorAll("#pod-hops tr").length > 5 ? "" : "hops table: " + document.querySelector("#pod-hops").textContent;
		})()`, pageTimeout)
		b.screenshot("creation-flow")
		var stages []struct{ ID, Time, Label string }
		b.value(`[...document.querySelectorAll("#pod-flow g.stage")].map((g) => ({ID: g.dataset.stage, Time: g.dataset.time, Label: g.getAttribute("aria-label")}))`, &stages)
		var prev time.Time
		for i, s := range stages {
			if s.ID != stageOrder[i] {
				t.Errorf("stage %d is %q, want %q", i, s.ID, stageOrder[i])
			}
			at, err := time.Parse(time.RFC3339Nano, s.Time)
			if err != nil {
				t.Errorf("stage %s: time %q: %v", s.ID, s.Time, err)
				continue
			}
			// Conditions carry their transition times; a stage may
			// share its predecessor's second, never come before it.
			if at.Before(prev.Truncate(time.Second)) {
				t.Errorf("stage %s at %s, before the stage before it (%s)", s.ID, at.Format(time.RFC3339Nano), prev.Format(time.RFC3339Nano))
			}
			prev = at
			t.Logf("stage %-11s %s  %s", s.ID, at.Format("15:04:05.000"), s.Label)
		}
	})

	t.Run("an unschedulable pod stops at the scheduler", func(t *testing.T) {
		b := b.with(t)
		tugctl(t, admin, `apiVersion: v1
kind: Pod
metadata: {name: stuck}
spec:
  nodeSelector: {disktype: none}
  containers: [{name: c, image: `+images.BusyboxRef+`, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}]
`, "apply", "-f", "-")
		b.run("back to the cluster view (key 1)", chromedp.KeyEvent("1"))
		b.waitFor("the stuck pod's chip among the unscheduled", `(() => {
			const c = document.querySelector('#nodes section.node[data-node=""] .chip[data-pod="default/stuck"]');
			return c ? "" : "unscheduled panel: " + (document.querySelector('#nodes section.node[data-node=""]')?.textContent ?? "none");
		})()`, pageTimeout)
		b.screenshot("unscheduled-chip")
		b.clickChip("default/stuck")
		b.waitFor("the flow stopped at the scheduler", `(() => {
			const g = document.querySelector('#pod-flow g.stage[data-stage="scheduler"]');
			if (!g) return "no scheduler stage yet: " + location.hash;
			if (g.dataset.status !== "failed") return "scheduler stage " + g.dataset.status;
			const later = [...document.querySelectorAll("#pod-flow g.stage")].filter((s) => +s.dataset.order > +g.dataset.order && s.dataset.status === "done");
			if (later.length) return "stages after the scheduler done: " + later.map((s) => s.dataset.stage).join(",");
			const f = document.querySelector("#pod-finding").textContent;
			return f.includes('Stopped at "scheduler"') && f.includes("layer scheduler") && f.includes("0/2 nodes are available") ? "" : "finding: " + f;
		})()`, pageTimeout)
		b.screenshot("unschedulable-flow")
	})

	t.Run("a missing image stops at the runtime with the import hint", func(t *testing.T) {
		b := b.with(t)
		tugctl(t, admin, `apiVersion: v1
kind: Pod
metadata: {name: noimage}
spec:
  containers: [{name: c, image: "127.0.0.1:5/tugboat/missing:v1", imagePullPolicy: IfNotPresent}]
`, "apply", "-f", "-")
		b.run("back to the cluster view (Escape)", chromedp.KeyEvent(kb.Escape))
		b.waitFor("noimage's chip failed on a node", `(() => {
			const c = document.querySelector('#nodes .chip[data-pod="default/noimage"]');
			if (!c) return "no chip";
			return c.dataset.node && c.classList.contains("s-bad") && /ErrImagePull|ImagePullBackOff|ErrImageNeverPull/.test(c.dataset.status) && c.textContent.startsWith("✗") ? "" : "chip: " + c.textContent + " on " + c.dataset.node;
		})()`, podTimeout)
		b.clickChip("default/noimage")
		b.waitFor("the flow stopped at the runtime", `(() => {
			const g = document.querySelector('#pod-flow g.stage[data-stage="runtime"]');
			if (!g) return "no runtime stage yet: " + location.hash;
			if (g.dataset.status !== "failed") return "runtime stage " + g.dataset.status + "; " + [...document.querySelectorAll("#pod-flow g.stage")].map((s) => s.dataset.stage + "=" + s.dataset.status).join(",");
			const f = document.querySelector("#pod-finding").textContent;
			const next = document.querySelector("#pod-finding code.next")?.textContent ?? "";
			return f.includes('Stopped at "runtime"') && f.includes("layer kubelet+runtime") && next.startsWith("tugctl image import IMAGE.tar --node node") ? "" : "finding: " + f;
		})()`, pageTimeout)
		b.screenshot("missing-image-flow")
	})

	t.Run("a Service's flow shows its endpoints flipping readiness", func(t *testing.T) {
		b := b.with(t)
		b.run("open the communication flow (key 3)", chromedp.KeyEvent("3"))
		b.run("pick service default/web", chromedp.SendKeys(chromedp.CSS("#svc-pick"), "default/web"),
			chromedp.Blur(chromedp.CSS("#svc-pick"))) // the change event: the page routes to the Service
		endpoints := func(want string) string {
			return `(() => {
				if (location.hash !== "#/service/default/web") return "route " + location.hash;
				const dns = document.querySelector('#svc-flow g[data-part="dns"]')?.getAttribute("aria-label") ?? "";
				if (!dns.includes("web.default.svc.cluster.local")) return "DNS box: " + dns;
				const eps = [...document.querySelectorAll('#svc-flow g[data-part="endpoint"]')].map((g) => g.dataset.pod + "=" + g.dataset.ready).sort().join(",");
				return eps === ` + jsString(want) + ` ? "" : "endpoints " + eps;
			})()`
		}
		pods, _, err := client.For[*v1.Pod](c.Client).List(context.Background(), client.ListOptions{Namespace: "default", LabelSelector: "app=web"})
		if err != nil || len(pods) != 3 {
			t.Fatalf("web pods: %d, %v", len(pods), err)
		}
		var names []string
		for _, p := range pods {
			names = append(names, p.GetMetadata().GetName())
		}
		sort.Strings(names)
		all := func(unready string) string {
			var parts []string
			for _, n := range names {
				parts = append(parts, fmt.Sprintf("%s=%v", n, n != unready))
			}
			return strings.Join(parts, ",")
		}
		b.waitFor("three ready endpoints", endpoints(all("")), podTimeout)
		b.screenshot("service-ready")
		flip := names[1]
		tugctl(t, admin, "", "exec", flip, "--", "rm", "/tmp/ready")
		b.waitFor(flip+" not ready", endpoints(all(flip)), podTimeout)
		b.waitFor("the endpoint table says so", `(() => {
			const row = document.querySelector('#svc-endpoints tr[data-pod="`+flip+`"]');
			return row && row.classList.contains("warning") && row.textContent.includes("✗ not ready") ? "" : "row: " + (row?.textContent ?? "none");
		})()`, pageTimeout)
		b.screenshot("service-one-unready")
		tugctl(t, admin, "", "exec", flip, "--", "touch", "/tmp/ready")
		b.waitFor(flip+" ready again", endpoints(all("")), podTimeout)
	})

	t.Run("an Ingress's trace, as tugctl trace ingress", func(t *testing.T) {
		b := b.with(t)
		tugctl(t, admin, `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web-ing}
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /gone, pathType: Prefix, backend: {service: {name: nosuch, port: {number: 80}}}}
`, "apply", "-f", "-")
		b.waitFor("the Ingress in the picker's list", `[...document.querySelectorAll("#ing-list option")].some((o) => o.value === "default/web-ing") ? "" :
			"options: " + [...document.querySelectorAll("#ing-list option")].map((o) => o.value).join(",")`, pageTimeout)
		b.run("pick ingress default/web-ing and trace it", chromedp.SendKeys(chromedp.CSS("#ing-pick"), "default/web-ing"),
			chromedp.Click(chromedp.CSS("#ing-trace")))
		b.waitFor("the trace stopped at the missing Service, the reachable one done", `(() => {
			const out = document.querySelector("#ing-trace-out");
			const h = out.querySelector("h2")?.textContent ?? "";
			if (!h.startsWith("tugctl trace ingress default/web-ing: ✗ stopped at")) return "heading: " + (h || out.textContent);
			const rows = [...out.querySelectorAll("table.hops tr")].map((r) => r.textContent);
			if (!rows.some((r) => r.includes("nosuch") && r.includes("ServiceNotFound"))) return "hops: " + rows.join(" | ");
			return out.querySelector("p.finding")?.textContent.includes("ServiceNotFound") || rows.some((r) => r.includes("failed")) ? "" : "finding: " + out.textContent;
		})()`, pageTimeout)
		b.screenshot("ingress-trace")
	})

	t.Run("a rolling update shows old and new ReplicaSets trading pods", func(t *testing.T) {
		b := b.with(t)
		b.run("back to the cluster view (key 1)", chromedp.KeyEvent("1"))
		tugctl(t, admin, "", "set", "env", "deploy/web", "ROLLOUT=2")
		// The page keeps each step of the rollout line it drew; the
		// update ends with the new ReplicaSet holding every pod.
		b.waitFor("the rollout done: revision 2 new with 3/3, revision 1 old with 0", `(() => {
			const d = document.querySelector('#workloads li[data-workload="Deployment/default/web"]');
			if (!d) return "no Deployment in the workloads panel";
			const rs = [...d.querySelectorAll('li[data-workload^="ReplicaSet/"] > button')].map((x) => x.textContent);
			const done = rs.some((x) => x.includes("3/3 ready (revision 2, new)")) && rs.some((x) => x.includes("0/0 ready (revision 1, old)"));
			return done && !d.querySelector(".rollout") ? "" : "ReplicaSets: " + rs.join(" | ") + "; rollout line: " + (d.querySelector(".rollout")?.textContent ?? "none");
		})()`, podTimeout)
		var seen []string
		b.value(`window.__console.rollouts["Deployment/default/web"] ?? []`, &seen)
		if len(seen) == 0 {
			t.Fatal("the page never drew the rolling update's line while both ReplicaSets had pods")
		}
		for _, s := range seen {
			if !strings.HasPrefix(s, "⇄ rolling update: new replicaset/web-") || !strings.Contains(s, " ← old replicaset/web-") {
				t.Errorf("rollout line %q", s)
			}
			t.Logf("drawn: %s", s)
		}
		b.screenshot("rolled-out")
	})

	t.Run("a view-only user sees Secrets forbidden", func(t *testing.T) {
		tugctl(t, admin, "", "create", "secret", "generic", "db-password", "--from-literal", "password=hunter2")
		tugctl(t, admin, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: console-viewer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: viewer}]
`, "apply", "-f", "-")
		token := strings.TrimSpace(tugctl(t, admin, "", "token", "create", "--user", "viewer"))
		tokenFile := filepath.Join(t.TempDir(), "viewer.token")
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		viewer := creds{"--server", c.Server, "--ca-file", filepath.Join(c.PKIDir(), "ca.crt"), "--token-file", tokenFile}
		vc := startConsole(t, viewer, "--listen", "127.0.0.1:0")
		vb := newBrowser(t)
		vb.open(vc.URL)
		vb.waitFor("Secrets forbidden, the pods shown", `(() => {
			const s = document.querySelector('#config [data-kind="secrets"]')?.textContent ?? "none";
			if (!s.includes("✗ forbidden") || !s.includes("secrets")) return "Secrets section: " + s;
			if (document.body.textContent.includes("db-password")) return "the Secret's name is on the page";
			const web = [...document.querySelectorAll("#nodes .chip")].filter((c) => /^default\/web-/.test(c.dataset.pod)).length;
			const cms = document.querySelector('#config [data-kind="configmaps"]')?.textContent ?? "";
			return web === 3 && !cms.includes("forbidden") ? "" : web + " web chips; ConfigMaps: " + cms;
		})()`, pageTimeout)
		vb.screenshot("viewer")
		// The feed itself never carries a Secret for this user.
		if raw, err := vb.eval(`JSON.stringify([...(window.__console.state.objects.secrets ?? new Map()).keys()])`); err != nil || raw != "[]" {
			t.Errorf("secrets in the viewer's page state: %s, %v", raw, err)
		}
	})

	t.Run("a non-loopback --listen asks for the token", func(t *testing.T) {
		addr := c.Lab.RootIP.String() // this machine's address on the lab's bridge, not loopback
		nc := startConsole(t, admin, "--listen", addr+":0")
		if nc.Token == "" || !strings.HasPrefix(nc.URL, "http://"+addr+":") {
			t.Fatalf("console beyond loopback: URL %q, token %q; output:\n%s", nc.URL, nc.Token, nc.out.String())
		}
		// Without the session cookie the API answers 401.
		resp, err := http.Get(nc.URL + "api/feed")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET api/feed without the token: %s, want 401", resp.Status)
		}
		tb := newBrowser(t)
		tb.open(nc.URL)
		tb.waitFor("the token dialog", `(() => {
			const d = document.querySelector("#token-dialog");
			return d.open ? "" : "dialog closed; status line: " + document.querySelector("#conn").textContent;
		})()`, pageTimeout)
		tb.screenshot("token-dialog")
		tb.run("a wrong token", chromedp.SendKeys(chromedp.CSS("#token-input"), "not-the-token"), chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)))
		tb.waitFor("the wrong token refused", `(() => {
			const e = document.querySelector("#token-error").textContent;
			return document.querySelector("#token-dialog").open && e.includes("wrong token") ? "" : "error line: " + e;
		})()`, pageTimeout)
		if _, err := tb.eval(`document.querySelector("#token-input").value = ""`); err != nil {
			t.Fatal(err)
		}
		tb.run("the right token", chromedp.SendKeys(chromedp.CSS("#token-input"), nc.Token),
			chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)))
		tb.waitFor("the console live after login", `(() => {
			if (document.querySelector("#token-dialog").open) return "dialog still open: " + document.querySelector("#token-error").textContent;
			const conn = document.querySelector("#conn").textContent;
			const web = [...document.querySelectorAll("#nodes .chip")].filter((c) => /^default\/web-/.test(c.dataset.pod)).length;
			return conn.startsWith("live") && web === 3 ? "" : conn + "; " + web + " web chips";
		})()`, pageTimeout)
		tb.screenshot("after-login")
	})
}

// waitNodesSchedulable waits until the nodes are Ready and untainted (the
// node lifecycle controller taints a node until its first Ready status),
// so the Deployment's pods may land on any of them.
func waitNodesSchedulable(t *testing.T, c *cluster.Cluster, names ...string) {
	t.Helper()
	wait.Eventually(t, podTimeout, "nodes Ready without taints", func() error {
		for _, name := range names {
			n, err := client.For[*v1.Node](c.Client).Get(context.Background(), "", name)
			if err != nil {
				return err
			}
			ready := false
			for _, cond := range n.GetStatus().GetConditions() {
				ready = ready || cond.GetType() == "Ready" && cond.GetStatus() == "True"
			}
			if !ready || len(n.GetSpec().GetTaints()) > 0 {
				return fmt.Errorf("node %s: taints %v, conditions %v", name, n.GetSpec().GetTaints(), n.GetStatus().GetConditions())
			}
		}
		return nil
	})
}
