package token

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestRotationAndBinding(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var reqs []*v1.TokenRequest
	var fail error
	m := New(func(_ context.Context, ns, sa string, tr *v1.TokenRequest) (*v1.TokenRequest, error) {
		if fail != nil {
			return nil, fail
		}
		reqs = append(reqs, tr)
		exp := now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)
		return &v1.TokenRequest{Status: &v1.TokenRequestStatus{Token: fmt.Sprintf("%s/%s#%d", ns, sa, len(reqs)), ExpirationTimestamp: timestamppb.New(exp)}}, nil
	}, func() time.Time { return now })
	pod := &v1.Pod{Metadata: &v1.ObjectMeta{Namespace: "ns", Name: "web", Uid: "u1"}, Spec: &v1.PodSpec{ServiceAccountName: "app"}}
	get := func() string {
		t.Helper()
		b, err := m.ServiceAccountToken(context.Background(), pod, "vault", 3600)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := get(); got != "ns/app#1" {
		t.Fatalf("first token %q", got)
	}
	r := reqs[0].Spec
	if r.BoundObjectRef.GetKind() != "Pod" || r.BoundObjectRef.GetName() != "web" || r.BoundObjectRef.GetUid() != "u1" || len(r.Audiences) != 1 || r.Audiences[0] != "vault" || *r.ExpirationSeconds != 3600 {
		t.Errorf("request %v", r)
	}
	now = now.Add(47 * time.Minute) // < 80% of an hour: cached
	if got := get(); got != "ns/app#1" {
		t.Errorf("at 47 min: %q, want the cached token", got)
	}
	now = now.Add(2 * time.Minute) // 49 min > 48 min: rotated
	if got := get(); got != "ns/app#2" {
		t.Errorf("at 49 min: %q, want a new token", got)
	}
	// A failed refresh keeps the still valid token; an expired one is an error.
	fail = errors.New("apiserver down")
	now = now.Add(50 * time.Minute)
	if got := get(); got != "ns/app#2" {
		t.Errorf("refresh failing while valid: %q", got)
	}
	now = now.Add(11 * time.Minute)
	if _, err := m.ServiceAccountToken(context.Background(), pod, "vault", 3600); err == nil {
		t.Error("an expired token was served")
	}
	// A long token is refreshed after 24 h.
	fail = nil
	long := int64(7 * 24 * 3600)
	m.ServiceAccountToken(context.Background(), pod, "", long)
	n := len(reqs)
	now = now.Add(23 * time.Hour)
	m.ServiceAccountToken(context.Background(), pod, "", long)
	now = now.Add(2 * time.Hour)
	m.ServiceAccountToken(context.Background(), pod, "", long)
	if len(reqs) != n+1 {
		t.Errorf("a week-long token: %d requests in 25 h, want 1 more after 24 h", len(reqs)-n+1)
	}
}
