package ingress

import (
	"io"
	"net/http"
	"net/http/httputil"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkIngressVsDirect: requests/s and p99 latency through the
// Ingress datapath (host and path rule, reverse proxy to the Service's
// endpoint), through a bare httputil.ReverseProxy (the floor of a
// net/http proxy hop), and straight to the same backend, in the same
// run, all in this process (client, proxy and backend share its CPU), with
// b.RunParallel clients (GOMAXPROCS × -cpu goroutines, -benchtime sets
// the requests) on keep-alive connections. Reports req/s and p99-ms.
//
//	go test -run '^$' -bench IngressVsDirect -benchtime 20000x -cpu 32 ./proxy/ingress/
func BenchmarkIngressVsDirect(b *testing.B) {
	cl := startCluster(b)
	backend := cl.backendFunc("bench", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello from the backend\n")
	})
	cl.service("bench", backend)
	cl.apply(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bench
spec:
  rules:
  - host: bench.example.com
    http:
      paths:
      - path: /app
        pathType: Prefix
        backend:
          service:
            name: bench
            port:
              number: 80
`)
	cl.eventually("bench.example.com", "/app/x", 200, "hello")
	// The floor: net/http's reverse proxy alone, to the same backend with
	// the same Transport settings, without routing, metrics or state.
	bare := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", backend
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport: cl.c.transport.Clone(),
	}
	bareAddr := cl.backendFunc("bare", bare.ServeHTTP)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}}
	for _, c := range []struct{ name, addr string }{{"direct", backend}, {"reverseproxy", bareAddr}, {"ingress", cl.http}} {
		b.Run(c.name, func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				req, _ := http.NewRequest("GET", "http://"+c.addr+"/app/x", nil)
				req.Host = "bench.example.com"
				for pb.Next() {
					t0 := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			elapsed := time.Since(start)
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}
