package tugctl

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// refuseGuarded is an eviction check that refuses pods labelled
// guard=yes, as a disruption budget with no disruption left would.
type refuseGuarded struct {
	mu    sync.Mutex
	asked []string
}

func (r *refuseGuarded) CheckEviction(_ context.Context, _ *storage.Store, pod *v1.Pod, _ *v1.DeleteRequest) error {
	r.mu.Lock()
	r.asked = append(r.asked, pod.GetMetadata().GetName())
	r.mu.Unlock()
	if pod.GetMetadata().GetLabels()["guard"] == "yes" {
		return apierrors.New(apierrors.ErrTooManyRequests, "Cannot evict pod as it would violate the pod's disruption budget.")
	}
	return nil
}

func node(t *testing.T, c *client.Client, name string) *v1.Node {
	t.Helper()
	n, err := client.For[*v1.Node](c).Get(ctxT(t), "", name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCordonTaint(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"n1", "n2"} {
		mustCreate(t, e.c, &v1.Node{Metadata: &v1.ObjectMeta{Name: n, Labels: map[string]string{"rack": "r1"}}})
	}
	// cordon / uncordon, by name and by selector.
	if r := mustOK(t, e.run("cordon", "n1")); r.out != "node/n1 cordoned\n" {
		t.Errorf("cordon: %q", r.out)
	}
	if !node(t, e.c, "n1").GetSpec().GetUnschedulable() {
		t.Errorf("n1 not unschedulable after cordon")
	}
	if r := mustOK(t, e.run("cordon", "-l", "rack=r1")); r.out != "node/n1 already cordoned\nnode/n2 cordoned\n" {
		t.Errorf("cordon -l: %q", r.out)
	}
	if r := mustOK(t, e.run("uncordon", "node/n2")); r.out != "node/n2 uncordoned\n" || node(t, e.c, "n2").GetSpec().GetUnschedulable() {
		t.Errorf("uncordon: %q", r.out)
	}
	mustFail(t, e.run("cordon", "nope"), `nodes "nope" not found`)

	// taint: add, refuse a duplicate without --overwrite, overwrite, remove.
	if r := mustOK(t, e.run("taint", "nodes", "n1", "dedicated=gpu:NoSchedule", "maint:NoExecute")); r.out != "node/n1 tainted\n" {
		t.Errorf("taint: %q", r.out)
	}
	ts := node(t, e.c, "n1").GetSpec().GetTaints()
	if len(ts) != 2 || ts[0].Key != "dedicated" || ts[0].Value != "gpu" || ts[0].Effect != "NoSchedule" || ts[1].Effect != "NoExecute" || ts[1].TimeAdded == nil || ts[0].TimeAdded != nil {
		t.Fatalf("taints after add: %v", ts)
	}
	mustFail(t, e.run("taint", "nodes", "n1", "dedicated=cpu:NoSchedule"), "node n1 already has dedicated taint(s) with same effect(s) and --overwrite is false")
	mustOK(t, e.run("taint", "nodes", "n1", "dedicated=cpu:NoSchedule", "--overwrite"))
	if ts := node(t, e.c, "n1").GetSpec().GetTaints(); len(ts) != 2 || ts[0].Value != "cpu" {
		t.Errorf("taints after --overwrite: %v", ts)
	}
	if r := mustOK(t, e.run("taint", "nodes", "n1", "maint:NoExecute-", "x=y:PreferNoSchedule")); r.out != "node/n1 modified\n" {
		t.Errorf("taint add+remove: %q", r.out)
	}
	if r := mustOK(t, e.run("taint", "node/n1", "dedicated-", "x-")); r.out != "node/n1 untainted\n" || len(node(t, e.c, "n1").GetSpec().GetTaints()) != 0 {
		t.Errorf("taint remove by key: %q %v", r.out, node(t, e.c, "n1").GetSpec().GetTaints())
	}
	mustOK(t, e.run("taint", "nodes", "--all", "zone=a:PreferNoSchedule"))
	if len(node(t, e.c, "n2").GetSpec().GetTaints()) != 1 {
		t.Errorf("taint --all missed n2")
	}
	// Bad specs name what is wrong and change nothing.
	before := node(t, e.c, "n2").GetMetadata().GetResourceVersion()
	for args, want := range map[string]string{
		"nodes n2 a=b:Sometimes":         "invalid taint effect: Sometimes",
		"nodes n2 a=b":                   "invalid taint spec: a=b",
		"nodes n2 bad_key!=v:NoSchedule": "invalid taint spec: bad_key!=v:NoSchedule: key",
		"nodes n2 gone-":                 `taint "gone" not found`,
		"pods p1 a=b:NoSchedule":         "only nodes have taints",
		"nodes n2 ok=1:NoSchedule nope-": `taint "nope" not found`,
		"nodes n2":                       "at least one taint",
	} {
		mustFail(t, e.run(append([]string{"taint"}, strings.Fields(args)...)...), want)
	}
	if node(t, e.c, "n2").GetMetadata().GetResourceVersion() != before {
		t.Errorf("a failed taint changed n2")
	}
}

func TestDrain(t *testing.T) {
	check := &refuseGuarded{}
	e := newEnv(t, func(c *apiserver.Config) { c.EvictionChecks = []apiserver.EvictionCheck{check} })
	mustCreate(t, e.c, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1"}})
	mustCreate(t, e.c, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n2"}})
	rs := &v1.OwnerReference{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Uid: "rs-uid", Controller: true}
	ds := &v1.OwnerReference{ApiVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Uid: "ds-uid", Controller: true}
	pod := func(name, node string, owner *v1.OwnerReference, grace int64, labels map[string]string, vols ...*v1.Volume) {
		m := &v1.ObjectMeta{Name: name, Namespace: "default", Labels: labels}
		if owner != nil {
			m.OwnerReferences = []*v1.OwnerReference{owner}
		}
		p := mustCreate(t, e.c, &v1.Pod{Metadata: m, Spec: &v1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: proto.Int64(grace), Volumes: vols,
			Containers: []*v1.Container{{Name: "c", Image: "busybox"}}}})
		p.Status = &v1.PodStatus{Phase: "Running"}
		if _, err := client.For[*v1.Pod](e.c).UpdateStatus(ctxT(t), p); err != nil {
			t.Fatal(err)
		}
	}
	pod("web-a", "n1", rs, 0, nil)
	pod("web-b", "n1", rs, 0, nil)
	pod("agent-x", "n1", ds, 0, nil)
	pod("bare", "n1", nil, 0, nil)
	pod("cache", "n1", rs, 0, nil, &v1.Volume{Name: "tmp", EmptyDir: &v1.EmptyDirVolumeSource{}})
	pod("other", "n2", rs, 0, nil)

	// Refused pods: nothing is evicted, the node stays cordoned, and the
	// error says which pods and which flag.
	r := e.run("drain", "n1")
	mustFail(t, r, `unable to drain node "n1"`,
		"cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/agent-x",
		"cannot delete Pods that declare no controller (use --force to override): default/bare",
		"cannot delete Pods with local storage (use --delete-emptydir-data to override): default/cache")
	if !node(t, e.c, "n1").GetSpec().GetUnschedulable() || !strings.Contains(r.out, "node/n1 cordoned") {
		t.Errorf("drain did not cordon n1: %v", r)
	}
	if pods, _, _ := client.For[*v1.Pod](e.c).List(ctxT(t), client.ListOptions{Namespace: "default"}); len(pods) != 6 {
		t.Fatalf("a refused drain removed pods: %d left", len(pods))
	}

	// With the flags: evicted through the eviction API (the check saw
	// them), the DaemonSet pod left running, the other node untouched.
	r = mustOK(t, e.run("drain", "n1", "--ignore-daemonsets", "--force", "--delete-emptydir-data"))
	for _, want := range []string{"node/n1 already cordoned", "pod/web-a evicted", "pod/web-b evicted", "pod/bare evicted", "pod/cache evicted", "node/n1 drained"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("drain output lacks %q: %v", want, r)
		}
	}
	if !strings.Contains(r.err, "Warning: deleting Pods that declare no controller: default/bare; deleting Pods with local storage: default/cache; ignoring DaemonSet-managed Pods: default/agent-x") {
		t.Errorf("drain warnings: %v", r)
	}
	left, _, _ := client.For[*v1.Pod](e.c).List(ctxT(t), client.ListOptions{Namespace: "default"})
	var names []string
	for _, p := range left {
		names = append(names, p.GetMetadata().GetName())
	}
	if strings.Join(names, ",") != "agent-x,other" {
		t.Errorf("pods after drain: %v, want agent-x,other", names)
	}
	if len(check.asked) != 4 {
		t.Errorf("the eviction check saw %v", check.asked)
	}

	// What holds a drain up is named when --timeout passes: a pod its
	// budget will not let go, and one still terminating on its node.
	pod("guarded", "n2", rs, 0, map[string]string{"guard": "yes"})
	pod("slow", "n2", rs, 30, nil)
	r = e.run("drain", "n2", "--timeout=1s")
	mustFail(t, r, `unable to drain node "n2" due to error: timed out after 1s waiting for 2 pod(s)`,
		"default/guarded (eviction refused: Cannot evict pod as it would violate the pod's disruption budget.)",
		"default/slow (terminating: waits for the kubelet on node n2 to stop it, grace period 30s)",
		`error when evicting pods/"guarded" -n "default" (will retry after 5s)`)
	if !strings.Contains(r.out, "pod/other evicted") {
		t.Errorf("drain n2 did not evict the free pod: %v", r)
	}
	if g, err := client.For[*v1.Pod](e.c).Get(ctxT(t), "default", "guarded"); err != nil || g.GetMetadata().GetDeletionTimestamp() != nil {
		t.Errorf("the refused pod changed: %v %v", g.GetMetadata(), err)
	}
	mustFail(t, e.run("drain", "n2", "--timeout=-1s"), "--timeout -1s: must not be negative")
}
