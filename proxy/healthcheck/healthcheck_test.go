package healthcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

type fakeSource struct {
	mu     sync.Mutex
	svcs   map[string]*v1.Service
	slices map[string][]*v1.EndpointSlice
}

func (f *fakeSource) Service(key string) (*v1.Service, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.svcs[key]
	return s, ok
}

func (f *fakeSource) EndpointSlices(key string) []*v1.EndpointSlice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.slices[key]
}

func (f *fakeSource) ServiceKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Keys(f.svcs))
}

func (f *fakeSource) set(s *v1.Service, sl ...*v1.EndpointSlice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.svcs[v1.Key(s)] = s
	f.slices[v1.Key(s)] = sl
}

func (f *fakeSource) remove(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.svcs, key)
	delete(f.slices, key)
}

func lbService(name, policy string, hcPort int) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: &v1.ServiceSpec{Type: "LoadBalancer", ExternalTrafficPolicy: policy, HealthCheckNodePort: int32(hcPort)}}
}

// slice of endpoints "ip@node", ready unless the node ends in "!".
func slice(ports []int32, eps ...[3]string) *v1.EndpointSlice {
	s := &v1.EndpointSlice{AddressType: "IPv4"}
	for _, p := range ports {
		s.Ports = append(s.Ports, &v1.EndpointSlicePort{Port: proto.Int32(p), Protocol: proto.String("TCP")})
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, &v1.Endpoint{Addresses: []string{e[0]}, NodeName: proto.String(e[1]),
			Conditions: &v1.EndpointConditions{Ready: proto.Bool(e[2] == "ready")}})
	}
	return s
}

// freePorts returns n ports free on loopback now.
func freePorts(t *testing.T, n int) []int {
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

type answer struct {
	code   int
	status Status
	weight string
	ctype  string
}

func get(port int, path string) (answer, error) {
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{code: resp.StatusCode, weight: resp.Header.Get("X-Load-Balancing-Endpoint-Weight"), ctype: resp.Header.Get("Content-Type")}
	if err := json.Unmarshal(b, &a.status); err != nil {
		return a, fmt.Errorf("body %q: %w", b, err)
	}
	return a, nil
}

func TestServerOnLoopback(t *testing.T) {
	ports := freePorts(t, 3)
	web, empty, clusterPort := ports[0], ports[1], ports[2]
	src := &fakeSource{svcs: map[string]*v1.Service{}, slices: map[string][]*v1.EndpointSlice{}}
	// web: two local ready endpoints on two ports each (4), one remote, one local not ready.
	src.set(lbService("web", "Local", web),
		slice([]int32{8080, 8443}, [3]string{"10.244.1.2", "node1", "ready"}, [3]string{"10.244.1.3", "node1", "ready"},
			[3]string{"10.244.2.2", "node2", "ready"}, [3]string{"10.244.1.9", "node1", "no"}))
	src.set(lbService("empty", "Local", empty), slice([]int32{80}, [3]string{"10.244.2.2", "node2", "ready"}))
	// Cluster policy: the apiserver allocates no port; one set anyway is not served.
	src.set(lbService("cluster", "Cluster", clusterPort), slice([]int32{80}, [3]string{"10.244.1.2", "node1", "ready"}))

	var healthy sync.Mutex
	proxyHealthy := true
	s, err := New(Config{NodeName: "node1", Source: src, ListenIP: netip.MustParseAddr("127.0.0.1"), RetryPeriod: 50 * time.Millisecond,
		Healthy: func() bool { healthy.Lock(); defer healthy.Unlock(); return proxyHealthy }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	eventually := func(what string, port int, cond func(answer, error) error) {
		t.Helper()
		wait.Eventually(t, 10*time.Second, what, func() error { return cond(get(port, "/healthz")) })
	}
	want := func(code, n int) func(answer, error) error {
		return func(a answer, err error) error {
			if err != nil {
				return err
			}
			if a.code != code || a.status.LocalEndpoints != n || a.weight != fmt.Sprint(n) || a.ctype != "application/json" {
				return fmt.Errorf("got %+v, want %d with %d local endpoints", a, code, n)
			}
			return nil
		}
	}
	eventually("web healthy", web, want(200, 4))
	a, err := get(web, "/any/path")
	if err != nil || a.code != 200 || a.status.Service.Namespace != "shop" || a.status.Service.Name != "web" || !a.status.ServiceProxyHealthy {
		t.Fatalf("any path: %+v, %v", a, err)
	}
	eventually("empty unavailable", empty, want(503, 0))
	if _, err := get(clusterPort, "/healthz"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Cluster Service's port: %v, want connection refused (not served)", err)
	}

	// Endpoint changes show at once (computed per request).
	src.set(lbService("web", "Local", web), slice([]int32{8080}, [3]string{"10.244.2.2", "node2", "ready"}))
	eventually("web without local endpoints", web, want(503, 0))
	src.set(lbService("web", "Local", web), slice([]int32{8080}, [3]string{"10.244.1.2", "node1", "ready"}))
	eventually("web back", web, want(200, 1))

	// The proxy unhealthy: 503 with serviceProxyHealthy false.
	healthy.Lock()
	proxyHealthy = false
	healthy.Unlock()
	if a, err := get(web, "/healthz"); err != nil || a.code != 503 || a.status.ServiceProxyHealthy || a.status.LocalEndpoints != 1 {
		t.Fatalf("proxy unhealthy: %+v, %v", a, err)
	}
	healthy.Lock()
	proxyHealthy = true
	healthy.Unlock()

	// A Service deleted or switched to Cluster: its port closes.
	src.remove("shop/empty")
	src.set(lbService("web", "Cluster", web))
	s.Changed()
	for _, p := range []int{empty, web} {
		eventually("port closed", p, func(_ answer, err error) error {
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("got %v, want connection refused", err)
			}
			return nil
		})
	}
	// Back to Local on another port: opened.
	moved := freePorts(t, 1)[0]
	src.set(lbService("web", "Local", moved), slice([]int32{8080}, [3]string{"10.244.1.2", "node1", "ready"}))
	s.Changed()
	eventually("web on its new port", moved, want(200, 1))
}

func TestPortTakenIsRetried(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := taken.Addr().(*net.TCPAddr).Port
	src := &fakeSource{svcs: map[string]*v1.Service{}, slices: map[string][]*v1.EndpointSlice{}}
	src.set(lbService("web", "Local", port), slice([]int32{80}, [3]string{"10.244.1.2", "node1", "ready"}))
	s, err := New(Config{NodeName: "node1", Source: src, ListenIP: netip.MustParseAddr("127.0.0.1"), RetryPeriod: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	failedOnce := make(chan struct{})
	var once sync.Once
	s.onSync = func(failed int) {
		if failed > 0 {
			once.Do(func() { close(failedOnce) })
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-failedOnce:
	case <-time.After(10 * time.Second):
		t.Fatal("no sync failed to bind the taken port")
	}
	taken.Close()
	wait.Eventually(t, 10*time.Second, "the port served once free", func() error {
		a, err := get(port, "/healthz")
		if err != nil || a.code != 200 {
			return fmt.Errorf("%+v, %v", a, err)
		}
		return nil
	})
}
