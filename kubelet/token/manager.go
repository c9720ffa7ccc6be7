// Package token is the kubelet's token manager (Kubernetes'
// pkg/kubelet/token): the tokens of serviceAccountToken projections,
// requested through the TokenRequest API (serviceaccounts/NAME/token)
// bound to the pod (boundObjectRef Pod name and uid), cached per pod,
// account, audience and lifetime, and requested again once older than
// 80% of their lifetime or 24 hours, whichever comes first. The pod
// workers ask at every volume refresh (once a minute), so a token is
// rotated within a minute of needing it; a failed refresh keeps serving
// the cached token while it is still valid.
package token

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// maxTTL is the age after which a token is refreshed whatever its
// lifetime (Kubernetes' 24 h).
const maxTTL = 24 * time.Hour

// Requester asks the API for a token; *client.Client's CreateToken.
type Requester func(ctx context.Context, ns, serviceAccount string, tr *v1.TokenRequest) (*v1.TokenRequest, error)

// Manager caches tokens. Safe for concurrent use.
type Manager struct {
	request Requester
	now     func() time.Time

	mu    sync.Mutex
	cache map[key]entry
}

type key struct {
	ns, sa, podUID, audience string
	exp                      int64
}

type entry struct {
	token         string
	issued, until time.Time
}

// New makes a manager; now may be nil (time.Now).
func New(request Requester, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{request: request, now: now, cache: map[key]entry{}}
}

// ServiceAccountToken returns a token of the pod's service account for
// audience (empty: the apiserver's), bound to the pod, valid for
// expirationSeconds (the apiserver may shorten it).
func (m *Manager) ServiceAccountToken(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) ([]byte, error) {
	md := pod.GetMetadata()
	sa := pod.GetSpec().GetServiceAccountName()
	if sa == "" {
		sa = "default"
	}
	k := key{ns: md.GetNamespace(), sa: sa, podUID: md.GetUid(), audience: audience, exp: expirationSeconds}
	now := m.now()
	m.mu.Lock()
	cached, ok := m.cache[k]
	m.mu.Unlock()
	if ok && !needsRefresh(cached, now) {
		return []byte(cached.token), nil
	}
	tr := &v1.TokenRequest{Spec: &v1.TokenRequestSpec{
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &v1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: md.GetName(), Uid: md.GetUid()},
	}}
	if audience != "" {
		tr.Spec.Audiences = []string{audience}
	}
	out, err := m.request(ctx, k.ns, sa, tr)
	if err == nil && out.GetStatus().GetToken() == "" {
		err = fmt.Errorf("the TokenRequest answer has no token")
	}
	if err != nil {
		if ok && now.Before(cached.until) {
			return []byte(cached.token), nil // still valid: retried at the next refresh
		}
		return nil, fmt.Errorf("requesting a token of service account %s/%s: %w", k.ns, sa, err)
	}
	e := entry{token: out.Status.Token, issued: now, until: now.Add(time.Duration(expirationSeconds) * time.Second)}
	if ts := out.GetStatus().GetExpirationTimestamp(); ts != nil {
		e.until = ts.AsTime()
	}
	m.mu.Lock()
	m.cache[k] = e
	for ck, ce := range m.cache { // drop what has expired (pods gone)
		if !now.Before(ce.until) {
			delete(m.cache, ck)
		}
	}
	m.mu.Unlock()
	return []byte(e.token), nil
}

// DeletePod forgets the pod's tokens.
func (m *Manager) DeletePod(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.cache {
		if k.podUID == uid {
			delete(m.cache, k)
		}
	}
}

// needsRefresh: older than 80% of its lifetime, or than maxTTL.
func needsRefresh(e entry, now time.Time) bool {
	ttl := e.until.Sub(e.issued)
	age := now.Sub(e.issued)
	return age > ttl*8/10 || age > maxTTL
}
