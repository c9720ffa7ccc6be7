package pod

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// hookServer records what each request to it carried.
type hookServer struct {
	mu   sync.Mutex
	seen []string // "TLS|plain path auth=<Authorization> x=<X-Hook>"
}

func (s *hookServer) handler(status int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		scheme := "plain"
		if r.TLS != nil {
			scheme = "TLS"
		}
		s.seen = append(s.seen, scheme+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" x="+r.Header.Get("X-Hook"))
		s.mu.Unlock()
		w.WriteHeader(status)
	})
}

func (s *hookServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// TestHTTPHookSchemes: an httpGet hook honours scheme HTTPS without
// verifying the certificate; an HTTPS hook that a plain HTTP server
// answers is sent again over HTTP without its Authorization header, and
// succeeds with Kubernetes' LifecycleHTTPFallback warning and the
// fallback counter; any answer is a success, a failed request a failure.
func TestHTTPHookSchemes(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedHost := closed.Listener.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		name      string
		tls       bool
		status    int
		scheme    string
		addr      string // instead of the test server's
		wantSeen  []string
		wantErr   string // substring; empty: the hook passes
		wantEvent bool
	}{
		{name: "https, self-signed", tls: true, status: 200, scheme: "HTTPS",
			wantSeen: []string{"TLS /hook auth=Bearer abc x=1"}},
		{name: "https answered in plain http: fallback", status: 200, scheme: "HTTPS",
			wantSeen: []string{"plain /hook auth= x=1"}, wantEvent: true},
		{name: "fallback answered 500 is still an answer", status: 500, scheme: "HTTPS",
			wantSeen: []string{"plain /hook auth= x=1"}, wantEvent: true},
		{name: "plain http keeps its Authorization", status: 503, scheme: "HTTP",
			wantSeen: []string{"plain /hook auth=Bearer abc x=1"}},
		{name: "https to a closed port", scheme: "HTTPS", addr: closedHost,
			wantErr: `HTTP lifecycle hook (/hook) for Container "app" in Pod "hooked_default(uid-hooked)" failed - error: Get "https://` + closedHost + `/hook"`},
		{name: "plain http to a tls server: its 400 is an answer", tls: true, status: 200, scheme: "HTTP",
			wantSeen: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			hs := &hookServer{}
			var srv *httptest.Server
			if tc.tls {
				srv = httptest.NewTLSServer(hs.handler(tc.status))
			} else {
				srv = httptest.NewServer(hs.handler(tc.status))
			}
			defer srv.Close()
			addr := tc.addr
			if addr == "" {
				addr = srv.Listener.Addr().String()
			}
			host, port, _ := net.SplitHostPort(addr)
			pod := newPod("hooked", "app")
			c := pod.Spec.Containers[0]
			h := &v1.LifecycleHandler{HttpGet: &v1.HTTPGetAction{Path: "/hook", Port: port, Scheme: tc.scheme,
				HttpHeaders: []*v1.HTTPHeader{{Name: "Authorization", Value: "Bearer abc"}, {Name: "X-Hook", Value: "1"}}}}
			w := e.worker(pod)
			err := w.runHook(context.Background(), pod, c, "app/0", host, h)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("hook failed: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("hook error %v, want one containing %q", err, tc.wantErr)
			}
			if got := hs.requests(); tc.wantSeen != nil && !slices.Equal(got, tc.wantSeen) {
				t.Errorf("server saw %q, want %q", got, tc.wantSeen)
			}
			wantEvent := "Warning LifecycleHTTPFallback: request to HTTPS lifecycle hook " + (&url.URL{Host: addr}).Host + " got HTTP response, retry with HTTP succeeded"
			if got := slices.Contains(e.rec.events, wantEvent); got != tc.wantEvent {
				t.Errorf("events %q: has %q = %v, want %v", e.rec.events, wantEvent, got, tc.wantEvent)
			}
			want := 0.0
			if tc.wantEvent {
				want = 1
			}
			if got := testutil.ToFloat64(e.m.metrics.lifecycleHTTPFallbacks); got != want {
				t.Errorf("fallbacks counted %v, want %v", got, want)
			}
		})
	}
}
