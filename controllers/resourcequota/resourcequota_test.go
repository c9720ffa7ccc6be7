package resourcequota_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/replicaset"
	"github.com/tugboat/tugboat/controllers/resourcequota"
)

func pod(name string, cpu string) *v1.Pod {
	return &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox",
		Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": cpu}}}}}}
}

// The controller recounts what the admission cannot see: a pod that
// finished frees its share, and a status.used that drifted is put right by
// the periodic recount.
func TestRecount(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	rc, err := resourcequota.New(d, resourcequota.Config{SyncPeriod: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, rc)
	quotas := client.For[*v1.ResourceQuota](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	if _, err := quotas.Create(ctx, &v1.ResourceQuota{Metadata: &v1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec: &v1.ResourceQuotaSpec{Hard: map[string]string{"pods": "5", "requests.cpu": "2", "count/pods": "5"}}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := pods.Create(ctx, pod(n, "500m")); err != nil {
			t.Fatal(err)
		}
	}
	used := func(want map[string]string) func() error {
		return func() error {
			q, err := quotas.Get(ctx, "default", "q")
			if err != nil {
				return err
			}
			for k, v := range want {
				if q.Status.Used[k] != v {
					return fmt.Errorf("status.used %v, want %s=%s", q.Status.Used, k, v)
				}
			}
			return nil
		}
	}
	wait.Eventually(t, 10*time.Second, "two pods counted", used(map[string]string{"pods": "2", "requests.cpu": "1", "count/pods": "2"}))

	done, err := pods.Get(ctx, "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	done.Status.Phase = "Succeeded"
	if _, err := pods.UpdateStatus(ctx, done); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "the finished pod freed", used(map[string]string{"pods": "1", "requests.cpu": "500m", "count/pods": "1"}))

	q, err := quotas.Get(ctx, "default", "q")
	if err != nil {
		t.Fatal(err)
	}
	q.Status.Used["pods"] = "4"
	if _, err := quotas.UpdateStatus(ctx, q); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "drift recounted", used(map[string]string{"pods": "1"}))
	// The pod that finished no longer counts: two more fit under pods: 5
	// only if the recount freed it (1 + 4 = 5).
	for i := range 4 {
		if _, err := pods.Create(ctx, pod(fmt.Sprintf("more%d", i), "100m")); err != nil {
			t.Fatalf("more%d: %v", i, err)
		}
	}
	if _, err := pods.Create(ctx, pod("over", "100m")); err == nil {
		t.Error("a sixth running pod was admitted under pods: 5")
	}
}

// A ReplicaSet of 3 under pods: 2 gets 2 pods and ReplicaFailure
// (FailedCreate, Kubernetes' "exceeded quota" text); a pod deleted is
// replaced within the quota; raising the quota lets the third in.
func TestReplicaSetUnderQuota(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	rc, err := resourcequota.New(d, resourcequota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rsc, err := replicaset.New(d, replicaset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, rc, rsc)
	quotas := client.For[*v1.ResourceQuota](s.Client)
	if _, err := quotas.Create(ctx, &v1.ResourceQuota{Metadata: &v1.ObjectMeta{Name: "two", Namespace: "default"},
		Spec: &v1.ResourceQuotaSpec{Hard: map[string]string{"pods": "2"}}}); err != nil {
		t.Fatal(err)
	}
	lbl := map[string]string{"app": "web"}
	rsAPI := client.For[*v1.ReplicaSet](s.Client)
	if _, err := rsAPI.Create(ctx, &v1.ReplicaSet{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: &v1.ReplicaSetSpec{
		Replicas: proto.Int32(3), Selector: &v1.LabelSelector{MatchLabels: lbl},
		Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox"}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "2 replicas and ReplicaFailure exceeded quota", func() error {
		rs, err := rsAPI.Get(ctx, "default", "web")
		if err != nil {
			return err
		}
		c := controller.GetCondition(rs.GetStatus().GetConditions(), "ReplicaFailure")
		if rs.GetStatus().GetReplicas() != 2 || c == nil || !strings.Contains(c.Message, "exceeded quota: two, requested: pods=1, used: pods=2, limited: pods=2") {
			return fmt.Errorf("status %v", rs.GetStatus())
		}
		return nil
	})
	pods := client.For[*v1.Pod](s.Client)
	list, _, err := pods.List(ctx, client.ListOptions{Namespace: "default"})
	if err != nil || len(list) != 2 {
		t.Fatalf("pods %d %v", len(list), err)
	}
	if _, err := pods.Delete(ctx, "default", list[0].Metadata.Name, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := list[0].Metadata.Uid
	wait.Eventually(t, 20*time.Second, "the deleted pod replaced", func() error {
		now, _, err := pods.List(ctx, client.ListOptions{Namespace: "default"})
		if err != nil {
			return err
		}
		if len(now) != 2 {
			return fmt.Errorf("%d pods", len(now))
		}
		for _, p := range now {
			if p.Metadata.Uid == gone {
				return fmt.Errorf("deleted pod %s still listed", p.Metadata.Name)
			}
		}
		return nil
	})
	q, err := quotas.Get(ctx, "default", "two")
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard["pods"] = "3"
	if _, err := quotas.Update(ctx, q); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "3 replicas once the quota allows", func() error {
		rs, err := rsAPI.Get(ctx, "default", "web")
		if err != nil {
			return err
		}
		if rs.GetStatus().GetReplicas() != 3 {
			return fmt.Errorf("status %v", rs.GetStatus())
		}
		return nil
	})
	wait.Eventually(t, 10*time.Second, "used pods 3", func() error {
		q, err := quotas.Get(ctx, "default", "two")
		if err != nil {
			return err
		}
		if q.Status.Used["pods"] != "3" {
			return fmt.Errorf("used %v", q.Status.Used)
		}
		return nil
	})
}
