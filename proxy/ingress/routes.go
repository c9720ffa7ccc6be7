package ingress

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// Snapshot is what a routing table is built from: the caches at one
// moment. Build reads it and never changes it.
type Snapshot struct {
	Ingresses []*v1.Ingress
	Classes   []*v1.IngressClass
	// Service returns the Service "namespace/name".
	Service func(key string) (*v1.Service, bool)
	// EndpointSlices returns the slices of the Service "namespace/name".
	EndpointSlices func(key string) []*v1.EndpointSlice
}

// Problem is something wrong with an Ingress that requests will meet: it
// becomes an Event on the Ingress (rate-limited by the controller).
type Problem struct {
	Ingress *v1.Ingress
	Reason  string
	Message string
}

// Table is one immutable routing table. Requests read the current table
// through an atomic pointer; a rebuild makes a new one and swaps it in, so
// requests in flight keep the backend they picked and open connections
// are never touched.
type Table struct {
	exact    map[string]*hostRules // "foo.example.com"
	wildcard map[string]*hostRules // "example.com" for "*.example.com"
	anyHost  *hostRules            // rules without host
	// fallback serves what no rule matches: the oldest served Ingress's
	// defaultBackend; nil: 404.
	fallback *backend
	// served are the Ingresses this table serves ("namespace/name").
	served []*v1.Ingress
}

// hostRules are the paths of one host, from every Ingress naming it.
type hostRules struct {
	exact    map[string]*backend
	prefixes []prefixRule // longest first
}

type prefixRule struct {
	path  string // without its trailing '/' ("" for "/")
	elems []string
	b     *backend
}

// backend is one resolved Service port: where requests go, or why they
// cannot (status 503 and the reason).
type backend struct {
	ingress   string // "namespace/name"
	namespace string
	name      string // the Ingress's name
	service   string // "web:80" as kubectl writes it
	addrs     []string
	next      atomic.Uint64
	reason    string // "" when addrs is not empty
	message   string

	// Set by the controller (wire) before the table serves; nil in a
	// table Build made alone.
	metrics *ingressMetrics
	proxy   http.Handler // nil without addrs
}

// pick returns the next endpoint, round robin.
func (b *backend) pick() string {
	n := b.next.Add(1)
	return b.addrs[(n-1)%uint64(len(b.addrs))]
}

// Served reports whether the Ingress is this controller's: its class (the
// field, else the deprecated annotation, else the default class) is one
// whose controller is tugboat.dev/ingress-controller.
func Served(ing *v1.Ingress, classes []*v1.IngressClass) bool {
	name := ing.GetSpec().GetIngressClassName()
	if ing.GetSpec().IngressClassName == nil {
		name = ing.GetMetadata().GetAnnotations()[validation.IngressClassAnnotation]
	}
	var def *v1.IngressClass
	for _, c := range classes {
		if name != "" && c.GetMetadata().GetName() == name {
			return c.GetSpec().GetController() == validation.IngressController
		}
		if c.GetMetadata().GetAnnotations()[validation.DefaultIngressClassAnnotation] == "true" &&
			(def == nil || c.GetMetadata().GetCreationTimestamp().AsTime().After(def.GetMetadata().GetCreationTimestamp().AsTime())) {
			def = c
		}
	}
	return name == "" && def != nil && def.GetSpec().GetController() == validation.IngressController
}

// Build makes the routing table of the served Ingresses, oldest first (on
// the same host and path the oldest Ingress wins, as ingress-nginx), and
// the problems found. Pure: a function of the snapshot.
func Build(s Snapshot) (*Table, []Problem) {
	t := &Table{exact: map[string]*hostRules{}, wildcard: map[string]*hostRules{}}
	ings := slices.Clone(s.Ingresses)
	slices.SortFunc(ings, func(a, b *v1.Ingress) int {
		if c := a.GetMetadata().GetCreationTimestamp().AsTime().Compare(b.GetMetadata().GetCreationTimestamp().AsTime()); c != 0 {
			return c
		}
		return cmp.Compare(v1.Key(a), v1.Key(b))
	})
	var problems []Problem
	for _, ing := range ings {
		if !Served(ing, s.Classes) {
			continue
		}
		t.served = append(t.served, ing)
		resolve := func(where string, b *v1.IngressBackend) *backend {
			be := resolveBackend(s, ing, b)
			if be.reason != "" {
				problems = append(problems, Problem{Ingress: ing, Reason: be.reason, Message: be.message + ": requests for " + where + " get 503"})
			}
			return be
		}
		if d := ing.GetSpec().GetDefaultBackend(); d != nil && t.fallback == nil {
			t.fallback = resolve("the default backend", d)
		}
		for _, r := range ing.GetSpec().GetRules() {
			hr := t.hostRules(r.GetHost())
			for _, p := range r.GetHttp().GetPaths() {
				where := cmp.Or(r.GetHost(), "*") + p.GetPath()
				switch p.GetPathType() {
				case "Exact":
					if _, taken := hr.exact[p.GetPath()]; !taken {
						hr.exact[p.GetPath()] = resolve(where, p.GetBackend())
					}
				default: // Prefix; ImplementationSpecific is served as Prefix
					path := strings.TrimSuffix(p.GetPath(), "/")
					if !slices.ContainsFunc(hr.prefixes, func(x prefixRule) bool { return x.path == path }) {
						hr.prefixes = append(hr.prefixes, prefixRule{path: path, elems: elements(path), b: resolve(where, p.GetBackend())})
					}
				}
			}
		}
	}
	for _, hr := range t.allHosts() {
		slices.SortStableFunc(hr.prefixes, func(a, b prefixRule) int { return cmp.Compare(len(b.path), len(a.path)) })
	}
	return t, problems
}

func (t *Table) hostRules(host string) *hostRules {
	var m map[string]*hostRules
	switch {
	case host == "":
		if t.anyHost == nil {
			t.anyHost = newHostRules()
		}
		return t.anyHost
	case strings.HasPrefix(host, "*."):
		m, host = t.wildcard, host[2:]
	default:
		m = t.exact
	}
	if m[host] == nil {
		m[host] = newHostRules()
	}
	return m[host]
}

func newHostRules() *hostRules { return &hostRules{exact: map[string]*backend{}} }

// backends are every backend of the table (a backend serving several
// paths once per path).
func (t *Table) backends() []*backend {
	var out []*backend
	if t.fallback != nil {
		out = append(out, t.fallback)
	}
	for _, hr := range t.allHosts() {
		for _, b := range hr.exact {
			out = append(out, b)
		}
		for _, p := range hr.prefixes {
			out = append(out, p.b)
		}
	}
	return out
}

func (t *Table) allHosts() []*hostRules {
	var out []*hostRules
	for _, m := range []map[string]*hostRules{t.exact, t.wildcard} {
		for _, hr := range m {
			out = append(out, hr)
		}
	}
	if t.anyHost != nil {
		out = append(out, t.anyHost)
	}
	return out
}

// elements splits a path into its '/'-separated elements, empty ones
// dropped: "/foo//bar/" -> [foo bar].
func elements(p string) []string {
	return slices.DeleteFunc(strings.Split(p, "/"), func(e string) bool { return e == "" })
}

// Match finds the backend of a request: the host's rules (an exact host,
// else a wildcard matching exactly one more label, else the rules without
// host), in them the longest matching path with Exact before Prefix on a
// tie, Prefix matched element by element ("/foo" matches "/foo" and
// "/foo/bar", not "/foobar"); else the default backend; nil: 404.
func (t *Table) Match(host, path string) *backend {
	host = strings.ToLower(host)
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	hr := t.exact[host]
	if hr == nil {
		if _, parent, ok := strings.Cut(host, "."); ok {
			hr = t.wildcard[parent]
		}
	}
	if hr == nil {
		hr = t.anyHost
	}
	if hr != nil {
		if b := hr.match(path); b != nil {
			return b
		}
	}
	return t.fallback
}

// match: an Exact path matches the whole request path, so it is never
// shorter than a matching Prefix and wins; else the longest Prefix.
func (hr *hostRules) match(path string) *backend {
	if b, ok := hr.exact[path]; ok {
		return b
	}
	for _, p := range hr.prefixes {
		if hasElements(path, p.elems) {
			return p.b
		}
	}
	return nil
}

// hasElements reports whether path's first elements (empty ones skipped,
// as elements does) are elems; it walks path in place, without splitting
// it (no allocation per request).
func hasElements(path string, elems []string) bool {
	for _, want := range elems {
		path = strings.TrimLeft(path, "/")
		if path == "" {
			return false
		}
		e, rest, _ := strings.Cut(path, "/")
		if e != want {
			return false
		}
		path = rest
	}
	return true
}

// resolveBackend finds the Service port of a backend and its ready
// endpoints (the serving terminating ones when none is ready, as
// kube-proxy does).
func resolveBackend(s Snapshot, ing *v1.Ingress, b *v1.IngressBackend) *backend {
	ns := ing.GetMetadata().GetNamespace()
	be := &backend{ingress: v1.Key(ing), namespace: ns, name: ing.GetMetadata().GetName()}
	sb := b.GetService()
	port := sb.GetPort().GetName()
	if n := sb.GetPort().GetNumber(); n != 0 {
		port = strconv.Itoa(int(n))
	}
	be.service = sb.GetName() + ":" + port
	key := ns + "/" + sb.GetName()
	svc, ok := s.Service(key)
	if !ok {
		be.reason, be.message = "ServiceNotFound", fmt.Sprintf("service %q not found", key)
		return be
	}
	var sp *v1.ServicePort
	for _, p := range svc.GetSpec().GetPorts() {
		if (sb.GetPort().GetNumber() != 0 && p.GetPort() == sb.GetPort().GetNumber()) || (sb.GetPort().GetName() != "" && p.GetName() == sb.GetPort().GetName()) {
			sp = p
		}
	}
	if sp == nil {
		be.reason, be.message = "ServicePortNotFound", fmt.Sprintf("service %q has no port %s", key, port)
		return be
	}
	var ready, serving []string
	for _, sl := range s.EndpointSlices(key) {
		if sl.GetAddressType() != "IPv4" {
			continue
		}
		for _, p := range sl.GetPorts() {
			if p.GetName() != sp.GetName() || cmp.Or(p.GetProtocol(), "TCP") != "TCP" || p.GetPort() <= 0 {
				continue
			}
			for _, e := range sl.GetEndpoints() {
				c := e.GetConditions()
				for _, a := range e.GetAddresses() {
					addr := a + ":" + strconv.Itoa(int(p.GetPort()))
					switch {
					case c == nil || c.Ready == nil || c.GetReady():
						ready = append(ready, addr)
					case c.GetServing():
						serving = append(serving, addr)
					}
				}
			}
		}
	}
	be.addrs = ready
	if len(ready) == 0 {
		be.addrs = serving
	}
	if len(be.addrs) == 0 {
		be.reason, be.message = "NoEndpoints", fmt.Sprintf("Service %q does not have any active Endpoint", key)
	}
	slices.Sort(be.addrs)
	return be
}
