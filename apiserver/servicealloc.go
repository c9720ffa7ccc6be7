package apiserver

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// serviceAllocator is the admission step that gives Services their
// ClusterIP and nodePorts. Each address or port is a storage claim
// (storage.Claim: one etcd transaction on its own key) owned by "ns/name",
// so two apiservers never hand out the same one; a claim is freed when its
// Service is deleted, and claims left by a crash are repaired at start.
type serviceAllocator struct {
	store    *storage.Store
	cidr     *net.IPNet
	portLo   int
	portHi   int
	reserved map[string]bool // never handed out dynamically (.1 for the API, .10 for DNS)
}

func newServiceAllocator(store *storage.Store, cidr string, ports string) (*serviceAllocator, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil || n.IP.To4() == nil {
		return nil, fmt.Errorf("--service-cidr %q: want an IPv4 CIDR such as 10.96.0.0/16", cidr)
	}
	ones, bits := n.Mask.Size()
	if bits-ones < 4 {
		return nil, fmt.Errorf("--service-cidr %q: too small (want at most /28)", cidr)
	}
	lo, hi, err := parsePortRange(ports)
	if err != nil {
		return nil, err
	}
	a := &serviceAllocator{store: store, cidr: n, portLo: lo, portHi: hi, reserved: map[string]bool{}}
	a.reserved[a.nth(1).String()] = true
	a.reserved[a.nth(10).String()] = true
	return a, nil
}

func parsePortRange(s string) (int, int, error) {
	parts := strings.Split(s, "-")
	if len(parts) == 2 {
		lo, e1 := strconv.Atoi(parts[0])
		hi, e2 := strconv.Atoi(parts[1])
		if e1 == nil && e2 == nil && lo > 0 && lo <= hi && hi <= 65535 {
			return lo, hi, nil
		}
	}
	return 0, 0, fmt.Errorf("--service-node-port-range %q: want LOW-HIGH such as 30000-32767", s)
}

// nth returns the n-th address of the CIDR.
func (a *serviceAllocator) nth(n int64) net.IP {
	base := new(big.Int).SetBytes(a.cidr.IP.To4())
	ip := new(big.Int).Add(base, big.NewInt(n)).Bytes()
	out := make(net.IP, 4)
	copy(out[4-len(ip):], ip)
	return out
}

func (a *serviceAllocator) size() int64 {
	ones, bits := a.cidr.Mask.Size()
	return int64(1) << (bits - ones)
}

func owner(s *v1.Service) string { return s.Metadata.Namespace + "/" + s.Metadata.Name }

// claimed is one item of a claim range.
type claimed struct{ rng, item string }

// txn is one Admit call's claims, undone if the call fails.
type txn struct{ claimed []claimed }

// claim takes item of range rng for who; it succeeds if the item is free
// or already who's. New claims are recorded in t so a failed admission can
// free them.
func (a *serviceAllocator) claim(ctx context.Context, t *txn, rng, item, who string) (bool, error) {
	held, taken, err := a.store.Claim(ctx, rng, item, who)
	if taken {
		t.claimed = append(t.claimed, claimed{rng, item})
	}
	return held, err
}

// free releases item of range rng if who holds it (best effort: repair
// frees what a failed release leaves).
func (a *serviceAllocator) free(ctx context.Context, rng, item, who string) {
	_ = a.store.Release(ctx, rng, item, who)
}

// Admit implements Admitter for Services.
func (a *serviceAllocator) Admit(ctx context.Context, obj, old v1.Object) error {
	svc := obj.(*v1.Service)
	who := owner(svc)
	t := &txn{}
	err := a.admit(ctx, t, svc, old, who)
	if err != nil {
		for _, c := range t.claimed {
			a.free(ctx, c.rng, c.item, who)
		}
	}
	return err
}

func (a *serviceAllocator) admit(ctx context.Context, t *txn, svc *v1.Service, old v1.Object, who string) error {
	var prev *v1.Service
	if old != nil {
		prev = old.(*v1.Service)
	}
	switch {
	case svc.Spec.Type == "ExternalName":
		// No cluster address: one it had is freed once the update is stored.
		svc.Spec.ClusterIp, svc.Spec.ClusterIps = "", nil
	case prev != nil && prev.Spec.GetClusterIp() != "":
		// ClusterIP: immutable once set (but by a change to ExternalName).
		if svc.Spec.ClusterIp == "" {
			svc.Spec.ClusterIp = prev.Spec.ClusterIp
		}
		if svc.Spec.ClusterIp != prev.Spec.ClusterIp {
			return apierrors.Invalid("spec.clusterIP", "field is immutable (%s)", prev.Spec.ClusterIp)
		}
	default:
		if err := a.admitClusterIP(ctx, t, svc, who); err != nil {
			return err
		}
	}
	if ips := svc.Spec.ClusterIps; len(ips) > 0 && ips[0] != svc.Spec.ClusterIp {
		if prev != nil {
			return apierrors.Invalid("spec.clusterIPs[0]", "field is immutable (%s)", svc.Spec.ClusterIp)
		}
		return apierrors.Invalid("spec.clusterIPs[0]", "%q must be the same as spec.clusterIP %q", ips[0], svc.Spec.ClusterIp)
	}
	if svc.Spec.ClusterIp != "" {
		svc.Spec.ClusterIps = []string{svc.Spec.ClusterIp}
	}
	if err := a.admitNodePorts(ctx, t, svc, prev, who); err != nil {
		return err
	}
	return a.admitHealthCheckNodePort(ctx, t, svc, prev, who)
}

func (a *serviceAllocator) admitClusterIP(ctx context.Context, t *txn, svc *v1.Service, who string) error {
	switch ip := svc.Spec.ClusterIp; {
	case ip == "None":
		return nil
	case ip != "":
		parsed := net.ParseIP(ip)
		if parsed == nil || !a.cidr.Contains(parsed) {
			return apierrors.Invalid("spec.clusterIP", "%s is not in the service CIDR %s", ip, a.cidr)
		}
		ok, err := a.claim(ctx, t, storage.RangeServiceIPs, ip, who)
		if err != nil {
			return err
		}
		if !ok {
			return apierrors.Invalid("spec.clusterIP", "%s is already allocated to another Service", ip)
		}
		return nil
	}
	n := a.size()
	start := rand.Int64N(n-2) + 1
	for i := int64(0); i < n; i++ {
		off := (start+i)%(n-2) + 1 // skip the network and broadcast addresses
		ip := a.nth(off).String()
		if a.reserved[ip] {
			continue
		}
		ok, err := a.claim(ctx, t, storage.RangeServiceIPs, ip, who)
		if err != nil {
			return err
		}
		if ok {
			svc.Spec.ClusterIp = ip
			return nil
		}
	}
	return apierrors.Invalid("spec.clusterIP", "the service CIDR %s is full", a.cidr)
}

// wantsNodePorts reports whether the Service gets node ports allocated:
// NodePort, and LoadBalancer unless allocateLoadBalancerNodePorts is false
// (node ports asked for explicitly are still claimed).
func wantsNodePorts(s *v1.ServiceSpec) bool {
	return s.GetType() == "NodePort" || (s.GetType() == "LoadBalancer" && (s.AllocateLoadBalancerNodePorts == nil || *s.AllocateLoadBalancerNodePorts))
}

func (a *serviceAllocator) admitNodePorts(ctx context.Context, t *txn, svc *v1.Service, prev *v1.Service, who string) error {
	if svc.Spec.Type != "NodePort" && svc.Spec.Type != "LoadBalancer" {
		for i, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				return apierrors.Invalid(fmt.Sprintf("spec.ports[%d].nodePort", i), "only valid for types NodePort and LoadBalancer")
			}
		}
		return nil
	}
	keep := map[int32]bool{}
	allocate := wantsNodePorts(svc.Spec)
	for i, p := range svc.Spec.Ports {
		path := fmt.Sprintf("spec.ports[%d].nodePort", i)
		if p.NodePort == 0 && prev != nil && allocate {
			// Keep the port this service already had for the same port.
			for _, pp := range prev.Spec.Ports {
				if pp.Port == p.Port && pp.Protocol == p.Protocol && pp.NodePort != 0 {
					p.NodePort = pp.NodePort
				}
			}
		}
		switch {
		case p.NodePort != 0:
			if err := a.claimNodePort(ctx, t, path, p.NodePort, who); err != nil {
				return err
			}
			keep[p.NodePort] = true
		case allocate:
			port, err := a.allocateNodePort(ctx, t, path, keep, who)
			if err != nil {
				return err
			}
			p.NodePort = port
			keep[port] = true
		}
	}
	return nil
}

// admitHealthCheckNodePort gives a LoadBalancer with externalTrafficPolicy
// Local its health check node port (kept across updates); other Services
// have none.
func (a *serviceAllocator) admitHealthCheckNodePort(ctx context.Context, t *txn, svc *v1.Service, prev *v1.Service, who string) error {
	const path = "spec.healthCheckNodePort"
	sp := svc.Spec
	if sp.Type != "LoadBalancer" || sp.ExternalTrafficPolicy != "Local" {
		if sp.HealthCheckNodePort != 0 {
			return apierrors.Invalid(path, "only valid for type LoadBalancer with externalTrafficPolicy Local")
		}
		return nil
	}
	if sp.HealthCheckNodePort == 0 && prev != nil {
		sp.HealthCheckNodePort = prev.Spec.GetHealthCheckNodePort()
	}
	if sp.HealthCheckNodePort != 0 {
		for i, p := range sp.Ports {
			if p.NodePort == sp.HealthCheckNodePort {
				return apierrors.Invalid(path, "%d is also spec.ports[%d].nodePort", p.NodePort, i)
			}
		}
		return a.claimNodePort(ctx, t, path, sp.HealthCheckNodePort, who)
	}
	used := map[int32]bool{}
	for _, p := range sp.Ports {
		used[p.NodePort] = true
	}
	port, err := a.allocateNodePort(ctx, t, path, used, who)
	sp.HealthCheckNodePort = port
	return err
}

// claimNodePort claims a node port asked for at path.
func (a *serviceAllocator) claimNodePort(ctx context.Context, t *txn, path string, port int32, who string) error {
	if int(port) < a.portLo || int(port) > a.portHi {
		return apierrors.Invalid(path, "%d is outside the node port range %d-%d", port, a.portLo, a.portHi)
	}
	ok, err := a.claim(ctx, t, storage.RangeNodePorts, strconv.Itoa(int(port)), who)
	if err != nil {
		return err
	}
	if !ok {
		return apierrors.Invalid(path, "%d is already allocated to another Service", port)
	}
	return nil
}

// allocateNodePort claims a free node port not in skip, for path.
func (a *serviceAllocator) allocateNodePort(ctx context.Context, t *txn, path string, skip map[int32]bool, who string) (int32, error) {
	span := a.portHi - a.portLo + 1
	start := rand.IntN(span)
	for j := 0; j < span; j++ {
		port := a.portLo + (start+j)%span
		if skip[int32(port)] {
			continue
		}
		ok, err := a.claim(ctx, t, storage.RangeNodePorts, strconv.Itoa(port), who)
		if err != nil {
			return 0, err
		}
		if ok {
			return int32(port), nil
		}
	}
	return 0, apierrors.Invalid(path, "no free node port in %d-%d", a.portLo, a.portHi)
}

// UpdateCommitted frees the node ports and the cluster address the old
// version had and the new one does not (only now: had the update failed,
// the old ones would still be in use).
func (a *serviceAllocator) UpdateCommitted(ctx context.Context, old, new v1.Object) {
	a.freeNotIn(ctx, old.(*v1.Service), new.(*v1.Service))
}

// UpdateAborted frees what was claimed for an update that was not stored.
func (a *serviceAllocator) UpdateAborted(ctx context.Context, old, new v1.Object) {
	a.freeNotIn(ctx, new.(*v1.Service), old.(*v1.Service))
}

// nodePortsOf lists a Service's node ports, the health check's included.
func nodePortsOf(s *v1.Service) []int32 {
	var out []int32
	for _, p := range s.GetSpec().GetPorts() {
		if p.NodePort != 0 {
			out = append(out, p.NodePort)
		}
	}
	if hc := s.GetSpec().GetHealthCheckNodePort(); hc != 0 {
		out = append(out, hc)
	}
	return out
}

// clusterIPOf is the Service's allocated address, "" for none.
func clusterIPOf(s *v1.Service) string {
	if ip := s.GetSpec().GetClusterIp(); ip != "None" {
		return ip
	}
	return ""
}

// freeNotIn frees from's node ports and address that keep does not use.
func (a *serviceAllocator) freeNotIn(ctx context.Context, from, keep *v1.Service) {
	used := map[int32]bool{}
	for _, p := range nodePortsOf(keep) {
		used[p] = true
	}
	for _, p := range nodePortsOf(from) {
		if !used[p] {
			a.free(ctx, storage.RangeNodePorts, strconv.Itoa(int(p)), owner(from))
		}
	}
	if ip := clusterIPOf(from); ip != "" && ip != clusterIPOf(keep) {
		a.free(ctx, storage.RangeServiceIPs, ip, owner(from))
	}
}

// Release implements Admitter: free the Service's address and ports.
func (a *serviceAllocator) Release(ctx context.Context, obj v1.Object) {
	svc := obj.(*v1.Service)
	who := owner(svc)
	if ip := clusterIPOf(svc); ip != "" {
		a.free(ctx, storage.RangeServiceIPs, ip, who)
	}
	for _, p := range nodePortsOf(svc) {
		a.free(ctx, storage.RangeNodePorts, strconv.Itoa(int(p)), who)
	}
}

// repair frees claims whose Service no longer exists or no longer uses them
// (an apiserver that died between claiming and storing).
func (a *serviceAllocator) repair(ctx context.Context) error {
	svcKind, _ := kinds.Lookup("Service")
	res, err := a.store.List(ctx, svcKind, storage.ListOptions{})
	if err != nil {
		return err
	}
	inUse := map[claimed]string{}
	for _, o := range res.Items {
		s := o.(*v1.Service)
		if ip := clusterIPOf(s); ip != "" {
			inUse[claimed{storage.RangeServiceIPs, ip}] = owner(s)
		}
		for _, p := range nodePortsOf(s) {
			inUse[claimed{storage.RangeNodePorts, strconv.Itoa(int(p))}] = owner(s)
		}
	}
	for _, rng := range []string{storage.RangeServiceIPs, storage.RangeNodePorts} {
		claims, err := a.store.Claims(ctx, rng, res.Revision)
		if err != nil {
			return err
		}
		for item, who := range claims {
			if inUse[claimed{rng, item}] != who {
				a.free(ctx, rng, item, who)
			}
		}
	}
	return nil
}
