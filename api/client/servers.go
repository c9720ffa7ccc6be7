package client

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/health" // client-side health checking of each apiserver
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// Several apiservers. Config.Server may name more than one apiserver,
// comma-separated ("a:6443,b:6443"): every one of them serves the whole
// API from the same etcd, so the client spreads its calls over them
// (gRPC's round_robin over one sub-connection per address) and leaves out
// any that is down or says it is not serving: each sub-connection is
// health-checked over grpc.health.v1 (the apiserver serves it without
// authentication), and a connection that breaks is left out until it
// connects and reports SERVING again. A call in flight on an apiserver that
// dies fails with Unavailable; Get and List (which change nothing) are
// retried by gRPC on another, writes are not (the caller cannot know
// whether a write that lost its connection was applied: it re-reads).
// Watches are streams on one apiserver; when it goes away the stream ends
// with Unavailable and the informer resumes from its last version on
// another one, whose watch cache serves the same etcd revisions, so no
// event is missed or repeated.
//
// With one address nothing changes: the default resolver and pick_first.

// SplitServers parses a comma-separated list of apiserver addresses, each
// host:port; it refuses an empty entry, an address without a port and a
// duplicate.
func SplitServers(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, fmt.Errorf("server %q: empty address in the list (want host:port[,host:port...])", s)
		}
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return nil, fmt.Errorf("server %q: %q is not host:port", s, a)
		}
		if seen[a] {
			return nil, fmt.Errorf("server %q: %s is listed twice", s, a)
		}
		seen[a] = true
		out = append(out, a)
	}
	return out, nil
}

// multiServiceConfig balances over the addresses, health-checks each and
// retries the reads that failed because an apiserver went away.
const multiServiceConfig = `{
  "loadBalancingConfig": [{"round_robin": {}}],
  "healthCheckConfig": {"serviceName": ""},
  "methodConfig": [{
    "name": [
      {"service": "tugboat.api.v1.Objects", "method": "Get"},
      {"service": "tugboat.api.v1.Objects", "method": "List"}
    ],
    "retryPolicy": {
      "maxAttempts": 4,
      "initialBackoff": "0.1s",
      "maxBackoff": "1s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`

var resolverSeq atomic.Int64

// multiTarget returns the dial target and options for several apiservers:
// a resolver of the client's own that hands gRPC the fixed list, each
// address with its host as the TLS server name (the certificate of each
// apiserver is checked against the name the user gave for it).
func multiTarget(servers []string) (string, []grpc.DialOption) {
	r := manual.NewBuilderWithScheme(fmt.Sprintf("tugboat-servers-%d", resolverSeq.Add(1)))
	addrs := make([]resolver.Address, 0, len(servers))
	for _, s := range servers {
		host, _, _ := net.SplitHostPort(s)
		addrs = append(addrs, resolver.Address{Addr: s, ServerName: host})
	}
	r.InitialState(resolver.State{Addresses: addrs})
	return r.Scheme() + ":///" + strings.Join(servers, ","), []grpc.DialOption{
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(multiServiceConfig),
	}
}

// EachServer returns one copy of cfg per apiserver it names, each with that
// one address: for what must reach every apiserver rather than any (the
// kubelet's tunnel, so that logs and exec work through all of them).
func (cfg Config) EachServer() ([]Config, error) {
	servers, err := SplitServers(cfg.Server)
	if err != nil {
		return nil, err
	}
	out := make([]Config, len(servers))
	for i, s := range servers {
		out[i] = cfg
		out[i].Server = s
	}
	return out, nil
}
