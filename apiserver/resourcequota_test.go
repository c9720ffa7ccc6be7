package apiserver_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func podWith(name, ns string, req, lim map[string]string) *v1.Pod {
	p := newPod(name, nil)
	p.Metadata.Namespace = ns
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Requests: req, Limits: lim}
	return p
}

func mkNamespace(t *testing.T, c *client.Client, name string) {
	t.Helper()
	if _, err := client.For[*v1.Namespace](c).Create(ctxT(t), &v1.Namespace{Metadata: &v1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// A quota from Kubernetes YAML is enforced as soon as it is stored: its
// status counts what the namespace holds, a pod without the requests it
// caps is refused ("failed quota ... must specify"), the pod that would go
// over is refused with Kubernetes' "exceeded quota" text and not stored,
// status.used follows creates and deletes at once, LimitRange defaults are
// charged, and bad quotas are refused naming the field.
func TestResourceQuotaAdmission(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	mkNamespace(t, s.Client, "team")
	quotas := client.For[*v1.ResourceQuota](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	cms := client.For[*v1.ConfigMap](s.Client)
	if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "before", Namespace: "team"}}); err != nil {
		t.Fatal(err)
	}
	existing, _, err := cms.List(ctx, client.ListOptions{Namespace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	q := decodeOne[*v1.ResourceQuota](t, `
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  namespace: team
spec:
  hard:
    pods: 2
    requests.cpu: "1"
    limits.memory: 1Gi
    configmaps: "10"
    count/deployments.apps: "1"
`)
	got, err := quotas.Create(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	wantUsed := func(want map[string]string) {
		t.Helper()
		q, err := quotas.Get(ctx, "team", "compute")
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if q.Status.Used[k] != v {
				t.Errorf("status.used[%s] = %q, want %q (used %v)", k, q.Status.Used[k], v, q.Status.Used)
			}
		}
	}
	if got.Status.GetHard()["limits.memory"] != "1Gi" || got.Status.GetUsed()["pods"] != "0" {
		t.Fatalf("status at create: %v", got.Status)
	}
	wantUsed(map[string]string{"configmaps": fmt.Sprint(len(existing)), "pods": "0", "requests.cpu": "0", "count/deployments.apps": "0"})

	if _, err := pods.Create(ctx, podWith("bare", "team", nil, nil)); err == nil ||
		!strings.Contains(err.Error(), `pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c`) || !errors.Is(err, apierrors.ErrForbidden) {
		t.Errorf("pod without requests: %v", err)
	}
	small := func(name string) *v1.Pod {
		return podWith(name, "team", map[string]string{"cpu": "400m"}, map[string]string{"memory": "256Mi"})
	}
	for _, n := range []string{"a", "b"} {
		if _, err := pods.Create(ctx, small(n)); err != nil {
			t.Fatal(err)
		}
	}
	wantUsed(map[string]string{"pods": "2", "requests.cpu": "800m", "limits.memory": "512Mi"})
	if _, err := pods.Create(ctx, small("c")); err == nil || !strings.Contains(err.Error(),
		`pods "c" is forbidden: exceeded quota: compute, requested: pods=1,requests.cpu=400m, used: pods=2,requests.cpu=800m, limited: pods=2,requests.cpu=1`) {
		t.Errorf("third pod: %v", err)
	}
	if _, err := pods.Get(ctx, "team", "c"); err == nil {
		t.Error("refused pod stored")
	}
	if _, err := pods.Delete(ctx, "team", "a", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantUsed(map[string]string{"pods": "1", "requests.cpu": "400m", "limits.memory": "256Mi"})
	if _, err := pods.DryRun().Create(ctx, small("dry")); err != nil {
		t.Fatal(err)
	}
	wantUsed(map[string]string{"pods": "1", "requests.cpu": "400m"})

	// A LimitRange's defaults are what the quota charges.
	if _, err := client.For[*v1.LimitRange](s.Client).Create(ctx, &v1.LimitRange{Metadata: &v1.ObjectMeta{Name: "defaults", Namespace: "team"},
		Spec: &v1.LimitRangeSpec{Limits: []*v1.LimitRangeItem{{Type: "Container", DefaultRequest: map[string]string{"cpu": "300m"}, Default: map[string]string{"memory": "128Mi"}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, podWith("defaulted", "team", nil, nil)); err != nil {
		t.Fatal(err)
	}
	wantUsed(map[string]string{"pods": "2", "requests.cpu": "700m", "limits.memory": "384Mi"})

	// Raising spec.hard is enforced at once.
	cur, _ := quotas.Get(ctx, "team", "compute")
	cur.Spec.Hard["pods"] = "3"
	if _, err := quotas.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, podWith("third", "team", map[string]string{"cpu": "100m"}, map[string]string{"memory": "1Mi"})); err != nil {
		t.Errorf("after raising pods to 3: %v", err)
	}

	for _, tc := range []struct {
		name, hard, want string
	}{
		{"unknown", "gpus: 1", `spec.hard.gpus: resource "gpus" is not supported in a quota`},
		{"fraction", "pods: 1.5", `spec.hard.pods: 1.5: must be an integer`},
		{"bad-quantity", "requests.cpu: lots", `spec.hard.requests.cpu: quantity "lots" is not valid`},
		{"no-kind", "count/widgets.example.com: 1", `spec.hard.count/widgets.example.com: no namespaced kind has the resource "widgets.example.com"`},
	} {
		bad := decodeOne[*v1.ResourceQuota](t, "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: "+tc.name+"\n  namespace: team\nspec:\n  hard:\n    "+tc.hard+"\n")
		if _, err := quotas.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if _, err := quotas.Get(ctx, "team", tc.name); err == nil {
			t.Errorf("%s stored", tc.name)
		}
	}
	if _, err := manifestDecodeErr("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: scoped\nspec:\n  scopes: [BestEffort]\n"); err == nil || !strings.Contains(err.Error(), "spec.scopes") {
		t.Errorf("scopes: %v", err)
	}
}

// 20 pods created at once against pods: 10 — exactly 10 are stored and
// status.used says 10: the charges are compare-and-swaps on the quota.
func TestResourceQuotaConcurrentCreates(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	mkNamespace(t, s.Client, "burst")
	quotas := client.For[*v1.ResourceQuota](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	if _, err := quotas.Create(ctx, &v1.ResourceQuota{Metadata: &v1.ObjectMeta{Name: "ten", Namespace: "burst"},
		Spec: &v1.ResourceQuotaSpec{Hard: map[string]string{"pods": "10", "requests.memory": "1Gi"}}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pods.Create(ctx, podWith(fmt.Sprintf("p%d", i), "burst", map[string]string{"memory": "64Mi"}, nil))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case strings.Contains(err.Error(), "exceeded quota: ten"):
				refused++
			default:
				t.Errorf("p%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	stored, _, err := pods.List(ctx, client.ListOptions{Namespace: "burst"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := quotas.Get(ctx, "burst", "ten")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d, refused %d, stored %d, used %v", ok, refused, len(stored), q.Status.Used)
	if ok != 10 || refused != 10 || len(stored) != 10 || q.Status.Used["pods"] != "10" || q.Status.Used["requests.memory"] != "640Mi" {
		t.Errorf("created %d, refused %d, stored %d, used %v: want 10, 10, 10, pods=10 requests.memory=640Mi", ok, refused, len(stored), q.Status.Used)
	}
}

func manifestDecodeErr(doc string) ([]manifest.Object, error) {
	return manifest.Decode("test.yaml", []byte(doc))
}

// BenchmarkPodCreate measures pod creates in a namespace without a quota
// and under one (pods and requests.cpu capped: a quota list, a read and a
// compare-and-swap write per create).
func BenchmarkPodCreate(b *testing.B) {
	for _, withQuota := range []bool{false, true} {
		name := "no-quota"
		if withQuota {
			name = "quota"
		}
		b.Run(name, func(b *testing.B) {
			s := apiservertest.Start(b)
			ctx := b.Context()
			if _, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "bench"}}); err != nil {
				b.Fatal(err)
			}
			if withQuota {
				if _, err := client.For[*v1.ResourceQuota](s.Client).Create(ctx, &v1.ResourceQuota{Metadata: &v1.ObjectMeta{Name: "q", Namespace: "bench"},
					Spec: &v1.ResourceQuotaSpec{Hard: map[string]string{"pods": "1000000", "requests.cpu": "1000000"}}}); err != nil {
					b.Fatal(err)
				}
			}
			pods := client.For[*v1.Pod](s.Client)
			b.ResetTimer()
			for i := range b.N {
				if _, err := pods.Create(ctx, podWith(fmt.Sprintf("p%d", i), "bench", map[string]string{"cpu": "10m"}, nil)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
