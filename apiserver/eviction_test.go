package apiserver_test

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
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// budget is an eviction check shaped like a disruption budget: pods
// labelled app=guarded may go while allowed > 0, and each eviction
// records itself by taking one.
type budget struct {
	mu      sync.Mutex
	allowed int
	seen    []string
}

func (b *budget) CheckEviction(_ context.Context, _ *storage.Store, pod *v1.Pod, _ *v1.DeleteRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = append(b.seen, pod.GetMetadata().GetName())
	if pod.GetMetadata().GetLabels()["app"] != "guarded" {
		return nil
	}
	if b.allowed <= 0 {
		return apierrors.New(apierrors.ErrTooManyRequests, "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget guard needs 1 healthy pods and has 1 currently")
	}
	b.allowed--
	return nil
}

func TestEvict(t *testing.T) {
	b := &budget{allowed: 1}
	s := apiservertest.Start(t, func(c *apiserver.Config) { c.EvictionChecks = []apiserver.EvictionCheck{b} })
	ctx := context.Background()
	pods := client.For[*v1.Pod](s.Client)
	mk := func(name, app, phase string) *v1.Pod {
		p, err := pods.Create(ctx, &v1.Pod{
			Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": app}},
			Spec:     &v1.PodSpec{NodeName: "n1", TerminationGracePeriodSeconds: proto.Int64(7), Containers: []*v1.Container{{Name: "c", Image: "busybox"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		p.Status = &v1.PodStatus{Phase: phase}
		if p, err = pods.UpdateStatus(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("free", "web", "Running")
	mk("g1", "guarded", "Running")
	mk("g2", "guarded", "Running")
	mk("done", "guarded", "Succeeded")

	// Allowed: deleted as a delete would, with the pod's grace period.
	out, err := s.Client.Evict(ctx, "default", "free", client.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.GetMetadata().GetDeletionTimestamp() == nil || out.GetMetadata().GetDeletionGracePeriodSeconds() != 7 {
		t.Errorf("evicted pod: deletion %v grace %d, want a graceful delete of 7s", out.GetMetadata().GetDeletionTimestamp(), out.GetMetadata().GetDeletionGracePeriodSeconds())
	}
	// The budget takes its one allowed disruption, then refuses; the
	// refused pod is unchanged.
	if _, err := s.Client.Evict(ctx, "default", "g1", client.DeleteOptions{GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "default", "g1"); !apierrors.IsNotFound(err) {
		t.Errorf("g1 after an eviction with grace 0: %v, want it gone", err)
	}
	_, err = s.Client.Evict(ctx, "default", "g2", client.DeleteOptions{})
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "disruption budget") {
		t.Fatalf("evicting g2 past the budget: %v, want ErrTooManyRequests naming the budget", err)
	}
	if g2, err := pods.Get(ctx, "default", "g2"); err != nil || g2.GetMetadata().GetDeletionTimestamp() != nil {
		t.Errorf("refused eviction changed g2: %v %v", g2.GetMetadata(), err)
	}
	// A finished pod disrupts nothing: the checks are not asked.
	b.seen = nil
	if _, err := s.Client.Evict(ctx, "default", "done", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(b.seen) != 0 {
		t.Errorf("checks asked about a finished pod: %v", b.seen)
	}
	// Bad requests name what is wrong and change nothing.
	for _, tc := range []struct {
		req  *v1.DeleteRequest
		want string
	}{
		{&v1.DeleteRequest{Kind: "Service", Namespace: "default", Name: "g2"}, "only pods are evicted, not services"},
		{&v1.DeleteRequest{Namespace: "default"}, "name: required"},
		{&v1.DeleteRequest{Namespace: "default", Name: "g2", GracePeriodSeconds: proto.Int64(-1)}, "gracePeriodSeconds"},
		{&v1.DeleteRequest{Namespace: "default", Name: "nope"}, "not found"},
		{&v1.DeleteRequest{Namespace: "default", Name: "g2", ResourceVersion: 1}, "modified"},
	} {
		_, err := s.Client.Objects().Evict(ctx, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Evict(%v): %v, want %q", tc.req, err, tc.want)
		}
	}
}
