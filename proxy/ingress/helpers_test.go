package ingress

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// cluster is a real apiserver on real etcd, an admin client, and the
// Ingress datapath running as the proxy's identity (system:kube-proxy,
// through RBAC) on loopback ports of its own.
type cluster struct {
	t     testing.TB
	srv   *apiservertest.Server
	admin *client.Client
	c     *Controller
	reg   *prometheus.Registry
	http  string // the ingress's HTTP address
	https string
	first *proxy // node-a's, whose fields c, reg, http and https are
}

const labelServiceName = "kubernetes.io/service-name"

// source is the proxy's caches, as proxy.source is.
type source struct {
	svcs  *informer.Informer[*v1.Service]
	eps   *informer.Informer[*v1.EndpointSlice]
	nodes *informer.Informer[*v1.Node]
}

func (s *source) Service(key string) (*v1.Service, bool) { return s.svcs.Get(key) }
func (s *source) EndpointSlices(key string) []*v1.EndpointSlice {
	return s.eps.ByIndex("service", key)
}
func (s *source) Nodes() []*v1.Node { return s.nodes.List() }

func startCluster(t testing.TB) *cluster {
	t.Helper()
	srv := apiservertest.StartSecure(t)
	cl := &cluster{t: t, srv: srv, admin: srv.Client}
	p := cl.startProxy("node-a")
	cl.first, cl.c, cl.reg, cl.http, cl.https = p, p.c, p.reg, p.http, p.https
	return cl
}

// proxy is one node's Ingress datapath.
type proxy struct {
	c           *Controller
	reg         *prometheus.Registry
	http, https string
	stop        func() // ends it and waits
}

// startProxy runs one more node's Ingress datapath, with informers of its
// own, as the proxy's identity, on loopback ports of its own.
func (cl *cluster) startProxy(node string) *proxy {
	t := cl.t
	t.Helper()
	reg := prometheus.NewRegistry()
	pc := cl.srv.ClientAs("proxy")
	log := testLogger().With("node", node)
	src := &source{
		svcs:  informer.New(client.For[*v1.Service](pc), informer.Options{Logger: log}),
		eps:   informer.New(client.For[*v1.EndpointSlice](pc), informer.Options{Logger: log}),
		nodes: informer.New(client.For[*v1.Node](pc), informer.Options{Logger: log}),
	}
	src.eps.AddIndex("service", func(s *v1.EndpointSlice) []string {
		if n := s.GetMetadata().GetLabels()[labelServiceName]; n != "" {
			return []string{s.GetMetadata().GetNamespace() + "/" + n}
		}
		return nil
	})
	c, err := New(Config{Listen: "127.0.0.1:0", TLSListen: "127.0.0.1:0", NodeName: node, Client: pc, Source: src, Registry: reg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	src.svcs.AddHandler(informer.Handler[*v1.Service]{OnAdd: func(*v1.Service) { c.Changed() },
		OnUpdate: func(_, _ *v1.Service) { c.Changed() }, OnDelete: func(*v1.Service) { c.Changed() }})
	src.eps.AddHandler(informer.Handler[*v1.EndpointSlice]{OnAdd: func(*v1.EndpointSlice) { c.Changed() },
		OnUpdate: func(_, _ *v1.EndpointSlice) { c.Changed() }, OnDelete: func(*v1.EndpointSlice) { c.Changed() }})
	src.nodes.AddHandler(informer.Handler[*v1.Node]{OnAdd: func(*v1.Node) { c.NodesChanged() },
		OnUpdate: func(_, _ *v1.Node) { c.NodesChanged() }, OnDelete: func(*v1.Node) { c.NodesChanged() }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 4)
	for _, run := range []func(context.Context) error{src.svcs.Run, src.eps.Run, src.nodes.Run} {
		go func() { done <- run(ctx) }()
	}
	for _, s := range []func(context.Context) bool{src.svcs.WaitForSync, src.eps.WaitForSync, src.nodes.WaitForSync} {
		s(ctx)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-runDone; err != nil {
				t.Errorf("ingress Run (%s): %v", node, err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-c.Ready():
	case err := <-runDone:
		t.Fatalf("ingress Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("ingress not ready after 30s")
	}
	p := &proxy{c: c, reg: reg, stop: stop}
	p.http, p.https = c.Addrs()
	return p
}

// backend is an HTTP server on loopback answering with its name (and the
// Host it was asked for); a Service and an EndpointSlice point at it.
func (cl *cluster) backend(name string) string {
	cl.t.Helper()
	return cl.backendFunc(name, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s%s", name, r.Host, r.URL.Path)
	})
}

// backendFunc is a loopback HTTP server with its own handler.
func (cl *cluster) backendFunc(name string, h http.HandlerFunc) string {
	cl.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cl.t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	cl.t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// service creates Service name (port http 80) with slices to addrs.
func (cl *cluster) service(name string, addrs ...string) {
	cl.t.Helper()
	ctx := context.Background()
	if _, err := client.For[*v1.Service](cl.admin).Create(ctx, &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []*v1.ServicePort{{Name: "http", Port: 80, TargetPort: "8080"}}}}); err != nil {
		cl.t.Fatal(err)
	}
	for i, a := range addrs {
		cl.slice(fmt.Sprintf("%s-%d", name, i), name, a)
	}
}

func (cl *cluster) slice(sliceName, svc, addr string) {
	cl.t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	if _, err := client.For[*v1.EndpointSlice](cl.admin).Create(context.Background(), &v1.EndpointSlice{
		Metadata:    &v1.ObjectMeta{Namespace: "default", Name: sliceName, Labels: map[string]string{labelServiceName: svc}},
		AddressType: "IPv4", Endpoints: []*v1.Endpoint{{Addresses: []string{host}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(true)}}},
		Ports: []*v1.EndpointSlicePort{{Name: proto.String("http"), Port: proto.Int32(int32(p)), Protocol: proto.String("TCP")}}}); err != nil {
		cl.t.Fatal(err)
	}
}

// apply creates the objects of a YAML document in namespace default.
func (cl *cluster) apply(doc string) {
	cl.t.Helper()
	objs, err := manifest.Decode("test.yaml", []byte(doc))
	if err != nil {
		cl.t.Fatal(err)
	}
	for _, o := range objs {
		if m := o.Object.GetMetadata(); m.Namespace == "" {
			m.Namespace = "default"
		}
		k, err := kinds.ForMessage(o.Object)
		if err != nil {
			cl.t.Fatal(err)
		}
		if _, err := client.ForKind(cl.admin, k).Create(context.Background(), o.Object); err != nil {
			cl.t.Fatal(err)
		}
	}
}

// get asks the ingress for host+path over HTTP.
func (cl *cluster) get(host, path string) (int, string, http.Header) {
	cl.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+cl.http+path, nil)
	req.Host = host
	return do(cl.t, http.DefaultClient, req)
}

func do(t testing.TB, c *http.Client, req *http.Request) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", req.Method, req.URL, req.Host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// eventually waits until host+path answers code with a body starting with want.
func (cl *cluster) eventually(host, path string, code int, want string) {
	cl.t.Helper()
	wait.Eventually(cl.t, 20*time.Second, fmt.Sprintf("%s%s -> %d %q", host, path, code, want), func() error {
		got, body, _ := cl.get(host, path)
		if got != code || !strings.HasPrefix(body, want) {
			return fmt.Errorf("got %d %q", got, body)
		}
		return nil
	})
}

// event waits for an Event on the Ingress with the reason, returning it.
func (cl *cluster) event(ingress, reason string) *v1.Event {
	cl.t.Helper()
	var found *v1.Event
	wait.Eventually(cl.t, 20*time.Second, "Event "+reason+" on ingress "+ingress, func() error {
		evs, _, err := client.For[*v1.Event](cl.admin).List(context.Background(), client.ListOptions{Namespace: "default"})
		if err != nil {
			return err
		}
		for _, e := range evs {
			if e.GetInvolvedObject().GetKind() == "Ingress" && e.GetInvolvedObject().GetName() == ingress && e.GetReason() == reason {
				found = e
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(evs))
	})
	return found
}

func tlsClient(roots *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: roots}, Timeout: 10 * time.Second}
}
