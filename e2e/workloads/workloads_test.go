package workloads

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// busybox is the test image, already on every node.
var busybox = images.BusyboxRef

// TestWorkloads runs the end-to-end checks in order on one
// three-node cluster. node3 starts without its kubelet and joins during
// the DaemonSet checks; the CronJob made first is checked last, after it
// has had a minute to fire.
func TestWorkloads(t *testing.T) {
	localPath := filepath.Join(t.TempDir(), "local-path")
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 3,
		ControllerManagerArgs: []string{"--job-pod-backoff", "1s", "--job-pod-backoff-max", "2s",
			"--horizontal-pod-autoscaler-sync-period", "2s", "--local-path-dir", localPath}})
	if !c.Scheduler || !c.ControllerManager {
		t.Fatalf("needs the scheduler and the controller-manager: %v", bins.Skipped)
	}
	k := tugctl{c: c}
	ctx := ctxFor(t, 20*time.Minute)

	// node3 leaves the cluster until the DaemonSet checks.
	node3 := c.Node("node3")
	node3.Stop()
	if _, err := client.For[*v1.Node](c.Client).Delete(ctx, "", "node3", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	cronCreated := time.Now()
	k.apply(t, `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          terminationGracePeriodSeconds: 1
          containers:
          - {name: tick, image: `+busybox+`, imagePullPolicy: IfNotPresent, command: [date]}
`)

	t.Run("Jobs", func(t *testing.T) { testJobs(ctx, t, c, k) })
	t.Run("DaemonSet", func(t *testing.T) { testDaemonSet(ctx, t, c, k) })
	t.Run("StatefulSet", func(t *testing.T) { testStatefulSet(ctx, t, c, k, localPath) })
	t.Run("HorizontalPodAutoscaler", func(t *testing.T) { testHPA(ctx, t, c, k) })
	t.Run("DrainUnderBudget", func(t *testing.T) { testDrain(ctx, t, c, k) })
	t.Run("CronJob", func(t *testing.T) { testCronJob(ctx, t, c, k, cronCreated) })

	// Leave the cluster empty: fewer containers for Close to remove.
	k.must(t, "delete", "daemonset", "agent")
	k.must(t, "delete", "deployment", "guarded")
	k.must(t, "delete", "pdb", "guarded")
	eventually(t, 2*time.Minute, "every pod gone", func(ctx context.Context) error {
		ps, err := pods(ctx, c.Client, "")
		if err != nil || len(ps) != 0 {
			return fmt.Errorf("%d pods left (%v)", len(ps), err)
		}
		return nil
	})
}

// jobManifest is the Kubernetes docs' pi Job shape with a busybox sum.
func jobManifest(name, extra, script string) string {
	return `apiVersion: batch/v1
kind: Job
metadata: {name: ` + name + `}
spec:
` + extra + `
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: ` + busybox + `
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", ` + fmt.Sprintf("%q", script) + `]
`
}

// waitJob waits for a Job's condition typ to be True and returns the Job.
func waitJob(t *testing.T, c *client.Client, name, typ string, during func(*v1.Job)) *v1.Job {
	t.Helper()
	var j *v1.Job
	eventually(t, 3*time.Minute, "job "+name+" "+typ, func(ctx context.Context) error {
		var err error
		if j, err = client.For[*v1.Job](c).Get(ctx, "default", name); err != nil {
			return err
		}
		if during != nil {
			during(j)
		}
		if cd := condition(j.GetStatus().GetConditions(), typ); cd == nil || cd.GetStatus() != "True" {
			return fmt.Errorf("job %s status %v", name, j.GetStatus())
		}
		return nil
	})
	return j
}

func testJobs(ctx context.Context, t *testing.T, c *cluster.Cluster, k tugctl) {
	k.apply(t, jobManifest("pi", "  completions: 3\n  parallelism: 2\n  backoffLimit: 4",
		"i=0; s=0; while [ $i -lt 2000 ]; do s=$((s+i)); i=$((i+1)); done; echo $s"))
	k.apply(t, jobManifest("fails", "  backoffLimit: 1", "echo failing; exit 3"))
	k.apply(t, jobManifest("indexed", "  completions: 3\n  parallelism: 3\n  completionMode: Indexed",
		`echo "index=$JOB_COMPLETION_INDEX"; [ -n "$JOB_COMPLETION_INDEX" ]`))

	maxActive := int32(0)
	pi := waitJob(t, c.Client, "pi", "Complete", func(j *v1.Job) { maxActive = max(maxActive, j.GetStatus().GetActive()) })
	if pi.GetStatus().GetSucceeded() != 3 || maxActive > 2 {
		t.Errorf("pi: succeeded %d (want 3), most active at once %d (parallelism 2)", pi.GetStatus().GetSucceeded(), maxActive)
	}
	out := k.must(t, "get", "jobs", "pi")
	if !strings.Contains(out, "COMPLETIONS") || !strings.Contains(out, "3/3") || !strings.Contains(out, "DURATION") {
		t.Errorf("tugctl get jobs pi:\n%s", out)
	}

	fails := waitJob(t, c.Client, "fails", "Failed", nil)
	if cd := condition(fails.GetStatus().GetConditions(), "Failed"); cd.GetReason() != "BackoffLimitExceeded" {
		t.Errorf("fails: Failed reason %q, want BackoffLimitExceeded", cd.GetReason())
	}
	if f := fails.GetStatus().GetFailed(); f != 2 {
		t.Errorf("fails: %d failed pods, want 2 (backoffLimit 1: the first and one retry)", f)
	}

	waitJob(t, c.Client, "indexed", "Complete", nil)
	ps, err := pods(ctx, c.Client, "job-name=indexed")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range ps {
		idx := p.GetMetadata().GetAnnotations()["batch.kubernetes.io/job-completion-index"]
		logs := k.must(t, "logs", p.GetMetadata().GetName())
		if !strings.Contains(logs, "index="+idx+"\n") {
			t.Errorf("pod %s (index annotation %q) printed %q", p.GetMetadata().GetName(), idx, logs)
		}
		seen[idx] = true
	}
	if len(seen) != 3 || !seen["0"] || !seen["1"] || !seen["2"] {
		t.Errorf("indexed: pod indexes %v, want 0, 1 and 2", seen)
	}
	for _, j := range []string{"pi", "fails", "indexed"} {
		k.must(t, "delete", "job", j)
	}
}

const daemonSetTemplate = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $NAME}
spec:
  selector: {matchLabels: {app: $NAME}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata: {labels: {app: $NAME}}
    spec:
      terminationGracePeriodSeconds: 1
      $TOLERATIONS
      containers:
      - name: agent
        image: $IMAGE
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "exec sleep 100000"]
        env: [{name: VERSION, value: "$VER"}]
        readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
`

func daemonSet(name, tolerations, version string) string {
	return strings.NewReplacer("$NAME", name, "$IMAGE", busybox, "$VER", version, "$TOLERATIONS", tolerations).Replace(daemonSetTemplate)
}

// wantOnNodes waits until the pods of app run ready on exactly nodes, one each.
func wantOnNodes(t *testing.T, c *client.Client, app string, nodes ...string) {
	t.Helper()
	eventually(t, 2*time.Minute, app+" pods ready on "+strings.Join(nodes, ","), func(ctx context.Context) error {
		got, err := readyByNode(ctx, c, "app="+app)
		if err != nil {
			return err
		}
		ps, _ := pods(ctx, c, "app="+app)
		if len(got) != len(nodes) || len(ps) != len(nodes) {
			return fmt.Errorf("ready %s pods per node: %v (%d pods)", app, got, len(ps))
		}
		for _, n := range nodes {
			if got[n] != 1 {
				return fmt.Errorf("ready %s pods per node: %v", app, got)
			}
		}
		return nil
	})
}

func testDaemonSet(ctx context.Context, t *testing.T, c *cluster.Cluster, k tugctl) {
	taint := &v1.Taint{Key: "e2e/dedicated", Value: "x", Effect: "NoSchedule"}
	setTaint(t, c.Client, "node2", taint, true)
	k.apply(t, daemonSet("agent", "", "1"))
	k.apply(t, daemonSet("tolerant", "tolerations: [{key: e2e/dedicated, operator: Exists, effect: NoSchedule}]", "1"))
	// node2's taint keeps agent off it; tolerant runs there.
	wantOnNodes(t, c.Client, "agent", "node1")
	wantOnNodes(t, c.Client, "tolerant", "node1", "node2")

	// node3 joins: both DaemonSets follow it within seconds.
	joined := time.Now()
	node3 := c.Node("node3")
	if err := node3.Start(); err != nil {
		t.Fatal(err)
	}
	if err := node3.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	wantOnNodes(t, c.Client, "agent", "node1", "node3")
	wantOnNodes(t, c.Client, "tolerant", "node1", "node2", "node3")
	t.Logf("node3 joined and ran both DaemonSets' pods in %s", time.Since(joined).Round(100*time.Millisecond))

	setTaint(t, c.Client, "node2", taint, false)
	wantOnNodes(t, c.Client, "agent", "node1", "node2", "node3")
	k.must(t, "delete", "daemonset", "tolerant")

	// A rolling update with maxUnavailable 1 replaces one node at a time:
	// at least two nodes keep a ready agent throughout.
	k.apply(t, daemonSet("agent", "", "2"))
	minReady := 3
	eventually(t, 3*time.Minute, "agent rolled out to VERSION 2", func(ctx context.Context) error {
		byNode, err := readyByNode(ctx, c.Client, "app=agent")
		if err != nil {
			return err
		}
		minReady = min(minReady, len(byNode))
		ds, err := client.For[*v1.DaemonSet](c.Client).Get(ctx, "default", "agent")
		if err != nil {
			return err
		}
		st := ds.GetStatus()
		if st.GetObservedGeneration() < ds.GetMetadata().GetGeneration() || st.GetUpdatedNumberScheduled() != 3 || st.GetNumberAvailable() != 3 || st.GetDesiredNumberScheduled() != 3 {
			return fmt.Errorf("agent status %v", st)
		}
		ps, err := pods(ctx, c.Client, "app=agent")
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.GetSpec().GetContainers()[0].GetEnv()[0].GetValue() != "2" || !isReady(p) {
				return fmt.Errorf("pod %s on %s not yet updated and ready", p.GetMetadata().GetName(), p.GetSpec().GetNodeName())
			}
		}
		return nil
	})
	if minReady < 2 {
		t.Errorf("during the rolling update only %d nodes had a ready agent (maxUnavailable 1 of 3)", minReady)
	}
	out := k.must(t, "rollout", "history", "daemonset/agent")
	if !strings.Contains(out, "REVISION") || !strings.Contains(out, "2 ") {
		t.Errorf("rollout history daemonset/agent:\n%s", out)
	}
}

func testStatefulSet(ctx context.Context, t *testing.T, c *cluster.Cluster, k tugctl, localPath string) {
	k.apply(t, `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: web, port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: `+busybox+`
        imagePullPolicy: IfNotPresent
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        command: ["sh", "-c", "echo $POD_NAME >> /data/names; exec sleep 100000"]
        volumeMounts: [{name: data, mountPath: /data}]
        readinessProbe: {exec: {command: [cat, /data/names]}, periodSeconds: 1}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 16Mi}}
`)
	var ps []*v1.Pod
	eventually(t, 3*time.Minute, "web-0..2 ready", func(ctx context.Context) error {
		var err error
		if ps, err = pods(ctx, c.Client, "app=web"); err != nil {
			return err
		}
		if len(ps) != 3 {
			return fmt.Errorf("%d web pods", len(ps))
		}
		for _, p := range ps {
			if !isReady(p) {
				return fmt.Errorf("%s not ready", p.GetMetadata().GetName())
			}
		}
		return nil
	})
	// OrderedReady: web-N is made only once web-(N-1) is Ready.
	for i, p := range ps {
		name := fmt.Sprintf("web-%d", i)
		if p.GetMetadata().GetName() != name || p.GetSpec().GetHostname() != name || p.GetSpec().GetSubdomain() != "web" {
			t.Errorf("pod %d: name %s hostname %s subdomain %s, want %s, %s, web", i, p.GetMetadata().GetName(), p.GetSpec().GetHostname(), p.GetSpec().GetSubdomain(), name, name)
		}
		if i == 0 {
			continue
		}
		readyAt := condition(ps[i-1].GetStatus().GetConditions(), "Ready").GetLastTransitionTime().AsTime()
		if made := p.GetMetadata().GetCreationTimestamp().AsTime(); made.Before(readyAt.Truncate(time.Second)) {
			t.Errorf("%s made at %s, before web-%d was Ready at %s", name, made, i-1, readyAt)
		}
	}

	// Deleting web-1 brings web-1 back on the same node with the same data.
	old := ps[1]
	k.must(t, "delete", "pod", "web-1")
	var back *v1.Pod
	eventually(t, 2*time.Minute, "a new web-1 ready", func(ctx context.Context) error {
		p, err := client.For[*v1.Pod](c.Client).Get(ctx, "default", "web-1")
		if err != nil {
			return err
		}
		if p.GetMetadata().GetUid() == old.GetMetadata().GetUid() || !isReady(p) {
			return fmt.Errorf("web-1 is still the old pod or not ready")
		}
		back = p
		return nil
	})
	if back.GetSpec().GetNodeName() != old.GetSpec().GetNodeName() {
		t.Errorf("web-1 came back on %s, was on %s", back.GetSpec().GetNodeName(), old.GetSpec().GetNodeName())
	}
	if out := k.must(t, "exec", "web-1", "--", "cat", "/data/names"); out != "web-1\nweb-1\n" {
		t.Errorf("web-1's volume holds %q, want both lives' names", out)
	}
	if out := k.must(t, "describe", "pvc", "data-web-1"); !strings.Contains(out, "Bound") || !strings.Contains(out, "web-1") {
		t.Errorf("describe pvc data-web-1:\n%s", out)
	}

	// Scaling to 1 removes web-2, then web-1; the claims stay.
	k.must(t, "scale", "statefulset", "web", "--replicas=1")
	var order []string
	eventually(t, 2*time.Minute, "web scaled to 1", func(ctx context.Context) error {
		ps, err := pods(ctx, c.Client, "app=web")
		if err != nil {
			return err
		}
		var names []string
		for _, p := range ps {
			names = append(names, p.GetMetadata().GetName())
		}
		if s := strings.Join(names, ","); len(order) == 0 || order[len(order)-1] != s {
			order = append(order, s)
		}
		if len(ps) != 1 {
			return fmt.Errorf("web pods %v", names)
		}
		return nil
	})
	for _, s := range order {
		if strings.Contains(s, "web-2") && !strings.Contains(s, "web-1") {
			t.Errorf("web-1 went before web-2: pods seen %v", order)
		}
	}
	for i := range 3 {
		pvc, err := client.For[*v1.PersistentVolumeClaim](c.Client).Get(ctx, "default", fmt.Sprintf("data-web-%d", i))
		if err != nil || pvc.GetStatus().GetPhase() != "Bound" {
			t.Errorf("claim data-web-%d after scaling down: %v %v", i, pvc.GetStatus(), err)
		}
	}

	// Deleting the set keeps the claims; deleting a claim releases its
	// volume, which the local-path provisioner deletes with its folder.
	k.must(t, "delete", "statefulset", "web")
	k.must(t, "delete", "service", "web")
	pvc, err := client.For[*v1.PersistentVolumeClaim](c.Client).Get(ctx, "default", "data-web-2")
	if err != nil {
		t.Fatal(err)
	}
	pvName := pvc.GetSpec().GetVolumeName()
	pv, err := client.For[*v1.PersistentVolume](c.Client).Get(ctx, "", pvName)
	if err != nil {
		t.Fatal(err)
	}
	dir := pv.GetSpec().GetLocal().GetPath()
	if !strings.HasPrefix(dir, localPath) || pv.GetSpec().GetPersistentVolumeReclaimPolicy() != "Delete" {
		t.Fatalf("volume %s: path %q, reclaim policy %q", pvName, dir, pv.GetSpec().GetPersistentVolumeReclaimPolicy())
	}
	if _, err := os.Stat(filepath.Join(dir, "names")); err != nil {
		t.Fatalf("web-2's data: %v", err)
	}
	eventually(t, time.Minute, "web-0 and web-1 gone", func(ctx context.Context) error {
		ps, err := pods(ctx, c.Client, "app=web")
		if err != nil || len(ps) != 0 {
			return fmt.Errorf("%d web pods left, %v", len(ps), err)
		}
		return nil
	})
	k.must(t, "delete", "pvc", "data-web-2")
	eventually(t, 2*time.Minute, "volume "+pvName+" and its folder deleted", func(ctx context.Context) error {
		_, err := client.For[*v1.PersistentVolume](c.Client).Get(ctx, "", pvName)
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("volume %s still there (%v)", pvName, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			return fmt.Errorf("folder %s still there (%v)", dir, err)
		}
		return nil
	})
	for _, name := range []string{"data-web-0", "data-web-1"} {
		k.must(t, "delete", "pvc", name)
	}
}

func testHPA(ctx context.Context, t *testing.T, c *cluster.Cluster, k tugctl) {
	k.apply(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: burn}
spec:
  replicas: 1
  selector: {matchLabels: {app: burn}}
  template:
    metadata: {labels: {app: burn}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: burn
        image: `+busybox+`
        imagePullPolicy: IfNotPresent
        env: [{name: LOAD, value: "on"}]
        command: ["sh", "-c", "if [ \"$LOAD\" = on ]; then while :; do :; done; fi; exec sleep 100000"]
        resources: {requests: {cpu: 100m}, limits: {cpu: 200m}}
`)
	k.apply(t, `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: burn}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burn}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0}
    scaleDown: {stabilizationWindowSeconds: 5}
`)
	hpaReplicas := func(want func(int32) bool, what string) {
		eventually(t, 3*time.Minute, what, func(ctx context.Context) error {
			h, err := client.For[*v1.HorizontalPodAutoscaler](c.Client).Get(ctx, "default", "burn")
			if err != nil {
				return err
			}
			d, err := client.For[*v1.Deployment](c.Client).Get(ctx, "default", "burn")
			if err != nil {
				return err
			}
			if r := d.GetSpec().GetReplicas(); !want(r) {
				return fmt.Errorf("burn has %d replicas; autoscaler status %v", r, h.GetStatus())
			}
			return nil
		})
	}
	hpaReplicas(func(r int32) bool { return r >= 2 }, "burn scaled up by its CPU load")
	if out := k.must(t, "describe", "hpa", "burn"); !strings.Contains(out, "ScalingActive") || !strings.Contains(out, "SuccessfulRescale") {
		t.Errorf("describe hpa burn:\n%s", out)
	}
	// The load stops: new, idle pods replace the burning ones (set env
	// leaves spec.replicas to the autoscaler, as apply without replicas
	// would not).
	k.must(t, "set", "env", "deployment/burn", "LOAD=off")
	hpaReplicas(func(r int32) bool { return r == 1 }, "burn scaled down once idle")
	h, err := client.For[*v1.HorizontalPodAutoscaler](c.Client).Get(ctx, "default", "burn")
	if err != nil {
		t.Fatal(err)
	}
	if cd := condition(h.GetStatus().GetConditions(), "AbleToScale"); cd.GetStatus() != "True" {
		t.Errorf("AbleToScale after scaling down: %v", cd)
	}
	k.must(t, "delete", "hpa", "burn")
	k.must(t, "delete", "deployment", "burn")
}

func testDrain(ctx context.Context, t *testing.T, c *cluster.Cluster, k tugctl) {
	// All three replicas start on node1; then node2 and node3 take the
	// evicted ones.
	k.must(t, "cordon", "node2", "node3")
	k.apply(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: guarded}
spec:
  replicas: 3
  selector: {matchLabels: {app: guarded}}
  template:
    metadata: {labels: {app: guarded}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: `+busybox+`
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "exec sleep 100000"]
        readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: guarded}}
`)
	eventually(t, 2*time.Minute, "guarded: 3 ready on node1, budget allows 1", func(ctx context.Context) error {
		byNode, err := readyByNode(ctx, c.Client, "app=guarded")
		if err != nil {
			return err
		}
		pdb, err := client.For[*v1.PodDisruptionBudget](c.Client).Get(ctx, "default", "guarded")
		if err != nil {
			return err
		}
		if byNode["node1"] != 3 || pdb.GetStatus().GetDisruptionsAllowed() != 1 {
			return fmt.Errorf("ready per node %v, budget %v", byNode, pdb.GetStatus())
		}
		return nil
	})
	k.must(t, "uncordon", "node2", "node3")

	// Watch the ready count while the drain runs.
	var mu sync.Mutex
	minReady := 3
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wctx.Err() == nil {
			byNode, err := readyByNode(wctx, c.Client, "app=guarded")
			if err == nil {
				n := 0
				for _, v := range byNode {
					n += v
				}
				mu.Lock()
				minReady = min(minReady, n)
				mu.Unlock()
			}
			select {
			case <-wctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	out, err := k.run("", "drain", "node1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout", "4m")
	stop()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tugctl drain node1:\n%s", out)
	if mu.Lock(); minReady < 2 {
		t.Errorf("guarded had only %d ready pods during the drain (budget minAvailable 2)", minReady)
	}
	mu.Unlock()
	n, err := client.For[*v1.Node](c.Client).Get(ctx, "", "node1")
	if err != nil || !n.GetSpec().GetUnschedulable() {
		t.Errorf("node1 not cordoned after drain: %v", err)
	}
	byNode, err := readyByNode(ctx, c.Client, "app=guarded")
	if err != nil || byNode["node1"] != 0 {
		t.Errorf("guarded pods per node after drain: %v %v", byNode, err)
	}
	if agents, _ := readyByNode(ctx, c.Client, "app=agent"); agents["node1"] != 1 {
		t.Errorf("drain --ignore-daemonsets should leave node1's agent: %v", agents)
	}
	k.must(t, "uncordon", "node1")
}

func testCronJob(ctx context.Context, t *testing.T, c *cluster.Cluster, k tugctl, created time.Time) {
	eventually(t, 90*time.Second-time.Since(created)+30*time.Second, "tick fired and a Job completed", func(ctx context.Context) error {
		cj, err := client.For[*v1.CronJob](c.Client).Get(ctx, "default", "tick")
		if err != nil {
			return err
		}
		if cj.GetStatus().GetLastScheduleTime() == nil || cj.GetStatus().GetLastSuccessfulTime() == nil {
			return fmt.Errorf("tick status %v", cj.GetStatus())
		}
		return nil
	})
	jobs, _, err := client.For[*v1.Job](c.Client).List(ctx, client.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var mine int
	for _, j := range jobs {
		for _, r := range j.GetMetadata().GetOwnerReferences() {
			if r.GetKind() == "CronJob" && r.GetName() == "tick" {
				mine++
			}
		}
	}
	if mine < 1 || mine > 2 {
		t.Errorf("tick owns %d Jobs (successfulJobsHistoryLimit 1, maybe one running)", mine)
	}
	k.must(t, "delete", "cronjob", "tick")
}
