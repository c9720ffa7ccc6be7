package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

type fakeExec struct{ code int }

func (f fakeExec) Exec(_ context.Context, _ string, req runtime.ExecRequest) (int, error) {
	if req.Cmd[0] == "missing" {
		return 0, fmt.Errorf("exec: %q: executable file not found", req.Cmd[0])
	}
	fmt.Fprint(req.Stdout, "out")
	return f.code, nil
}

func hostPort(t *testing.T, addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

func TestProbeHandlers(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Header.Get("X-Probe") != "yes" {
			http.Error(w, "bad request "+r.URL.Path, 400)
			return
		}
		w.WriteHeader(int(status.Load()))
		fmt.Fprint(w, "body")
	}))
	defer srv.Close()
	ip, port := hostPort(t, srv.Listener.Addr().String())
	c := &v1.Container{Name: "c", Ports: []*v1.ContainerPort{{Name: "http", ContainerPort: mustAtoi(port)}}}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	_, closedPort := hostPort(t, closed.Addr().String())
	closed.Close()

	for _, tc := range []struct {
		name   string
		probe  *v1.Probe
		status int32
		ok     bool
		msg    string
	}{
		{"http ok by port name", &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/healthz", Port: "http", HttpHeaders: []*v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}}, 200, true, ""},
		{"http redirect counts", &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/healthz", Port: port, HttpHeaders: []*v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}}, 302, true, ""},
		{"http 500", &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/healthz", Port: port, HttpHeaders: []*v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}}, 500, false, "statuscode: 500"},
		{"http unknown port name", &v1.Probe{HttpGet: &v1.HTTPGetAction{Port: "nope"}}, 200, false, `couldn't find port: nope in c`},
		{"http refused", &v1.Probe{HttpGet: &v1.HTTPGetAction{Port: closedPort}}, 200, false, "refused"},
		{"tcp ok", &v1.Probe{TcpSocket: &v1.TCPSocketAction{Port: port}}, 200, true, ""},
		{"tcp refused", &v1.Probe{TcpSocket: &v1.TCPSocketAction{Port: closedPort}}, 200, false, "refused"},
		{"exec ok", &v1.Probe{Exec: &v1.ExecAction{Command: []string{"true"}}}, 200, true, ""},
		{"exec missing", &v1.Probe{Exec: &v1.ExecAction{Command: []string{"missing"}}}, 200, false, "not found"},
		{"no handler", &v1.Probe{}, 200, false, "no handler"},
	} {
		status.Store(tc.status)
		ok, msg := run(context.Background(), fakeExec{}, &v1.Pod{}, ip, c, "id", tc.probe, time.Second)
		if ok != tc.ok || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: ok %v msg %q, want %v containing %q", tc.name, ok, msg, tc.ok, tc.msg)
		}
	}
	ok, msg := run(context.Background(), fakeExec{code: 2}, &v1.Pod{}, ip, c, "id", &v1.Probe{Exec: &v1.ExecAction{Command: []string{"check"}}}, time.Second)
	if ok || !strings.Contains(msg, "exited with 2: out") {
		t.Errorf("exec exit 2: %v %q", ok, msg)
	}
}

func mustAtoi(s string) int32 {
	var n int32
	fmt.Sscan(s, &n)
	return n
}

type events struct {
	mu  sync.Mutex
	msg []string
}

func (e *events) Eventf(_ v1.Object, typ, reason, format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.msg = append(e.msg, typ+" "+reason+": "+fmt.Sprintf(format, args...))
}

func (e *events) count() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.msg) }

// TestThresholdsAndStartup runs real probe goroutines (period 1s) against
// a server that fails on demand.
// TestHTTPProbeRedirects: as Kubernetes' probes, a redirect to the same
// host is followed (its target's answer decides), one to another host is
// not (the 3xx counts as success), and a loop stops after 10 redirects.
func TestHTTPProbeRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-broken":
			http.Redirect(w, r, "/broken", http.StatusFound)
		case "/broken":
			http.Error(w, "down", http.StatusInternalServerError)
		case "/elsewhere":
			// localhost is another host name than the probe's 127.0.0.1.
			http.Redirect(w, r, "http://localhost:1/broken", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	defer srv.Close()
	ip, port := hostPort(t, srv.Listener.Addr().String())
	c := &v1.Container{Name: "c"}
	for _, tc := range []struct {
		path string
		ok   bool
		msg  string
	}{
		{"/to-broken", false, "statuscode: 500: down"},
		{"/elsewhere", true, ""},
		{"/loop", false, "stopped after 10 redirects"},
	} {
		ok, msg := httpProbe(context.Background(), ip, c, &v1.HTTPGetAction{Path: tc.path, Port: port}, time.Second)
		if ok != tc.ok || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: ok %v %q, want %v containing %q", tc.path, ok, msg, tc.ok, tc.msg)
		}
	}
}

func TestThresholdsAndStartup(t *testing.T) {
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			http.Error(w, "sick", 503)
		}
	}))
	defer srv.Close()
	ip, port := hostPort(t, srv.Listener.Addr().String())
	changes := make(chan string, 100)
	ev := &events{}
	m := New(Config{Recorder: ev, OnChange: func(uid string) { changes <- uid }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	wait.Eventually(t, 10*time.Second, "the prober running", func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.ctx == nil {
			return errors.New("Run has not started")
		}
		return nil
	})

	get := &v1.HTTPGetAction{Port: port}
	pod := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p", Namespace: "default", Uid: "u1"}, Spec: &v1.PodSpec{Containers: []*v1.Container{{
		Name:           "c",
		StartupProbe:   &v1.Probe{HttpGet: get, PeriodSeconds: 1, FailureThreshold: 30},
		LivenessProbe:  &v1.Probe{HttpGet: get, PeriodSeconds: 1, FailureThreshold: 2},
		ReadinessProbe: &v1.Probe{HttpGet: get, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1},
	}}}}
	m.UpdatePod(pod, ip, []Target{{Name: "c", ContainerID: "id1", StartedAt: time.Now()}})

	if r := m.Result("u1", "c", Liveness); r.State != Success || r.ContainerID != "id1" {
		t.Errorf("initial liveness %+v, want Success", r)
	}
	// Failing startup probe: liveness and readiness wait; nothing changes.
	wait.Eventually(t, 10*time.Second, "two failed startup probes", func() error {
		if n := ev.count(); n < 2 {
			return fmt.Errorf("%d event(s)", n)
		}
		return nil
	})
	if r := m.Result("u1", "c", Readiness); r.State != Unknown {
		t.Errorf("readiness %v while the startup probe has not succeeded", r.State)
	}
	healthy.Store(true)
	waitResult(t, m, Startup, Success)
	waitResult(t, m, Readiness, Success)
	healthy.Store(false)
	waitResult(t, m, Readiness, Failure)
	waitResult(t, m, Liveness, Failure)
	if r := m.Result("u1", "c", Liveness); !strings.Contains(r.Message, "503") {
		t.Errorf("liveness message %q", r.Message)
	}
	// A new container ID starts over.
	m.UpdatePod(pod, ip, []Target{{Name: "c", ContainerID: "id2", StartedAt: time.Now()}})
	if r := m.Result("u1", "c", Liveness); r.State != Success || r.ContainerID != "id2" {
		t.Errorf("liveness after restart %+v", r)
	}
	m.RemovePod("u1")
	if r := m.Result("u1", "c", Liveness); r.State != Unknown {
		t.Errorf("result after RemovePod: %+v", r)
	}
	if len(changes) == 0 {
		t.Error("OnChange never called")
	}
}

// waitResult waits for the probe of kind of container c of pod u1 to say
// state.
func waitResult(t *testing.T, m *Manager, kind Kind, state State) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, fmt.Sprintf("%s probe %s", kind, state), func() error {
		if r := m.Result("u1", "c", kind); r.State != state {
			return fmt.Errorf("result %+v", r)
		}
		return nil
	})
}

// TestNetworkProbe: with Config.NetworkProbe, httpGet, tcpSocket and grpc
// probes go to it and never to the network (the pod's address is one no
// packet may be sent to); exec probes still go to the runtime.
func TestNetworkProbe(t *testing.T) {
	var calls atomic.Int32
	m := New(Config{Exec: fakeExec{code: 1}, NetworkProbe: func(_ context.Context, podIP string, c *v1.Container, p *v1.Probe) (bool, string) {
		calls.Add(1)
		if podIP != "192.0.2.10" || c.Name != "c" || p.HttpGet == nil {
			return false, fmt.Sprintf("unexpected probe of %s %s %v", podIP, c.Name, p)
		}
		return true, ""
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	wait.Eventually(t, 10*time.Second, "the prober running", func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.ctx == nil {
			return errors.New("Run has not started")
		}
		return nil
	})
	pod := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p", Namespace: "default", Uid: "u1"}, Spec: &v1.PodSpec{Containers: []*v1.Container{{
		Name:           "c",
		ReadinessProbe: &v1.Probe{HttpGet: &v1.HTTPGetAction{Port: "8080"}, PeriodSeconds: 1},
		LivenessProbe:  &v1.Probe{Exec: &v1.ExecAction{Command: []string{"check"}}, PeriodSeconds: 1, FailureThreshold: 1},
	}}}}
	// TEST-NET-1: were the probe sent, it would fail (and leave the host).
	m.UpdatePod(pod, "192.0.2.10", []Target{{Name: "c", ContainerID: "id1", StartedAt: time.Now()}})
	waitResult(t, m, Readiness, Success)
	waitResult(t, m, Liveness, Failure)
	if calls.Load() == 0 {
		t.Error("NetworkProbe never called")
	}
}
