package kubelet

import (
	"github.com/tugboat/tugboat/kubelet/server"
	"github.com/tugboat/tugboat/proxy/nftables"
)

// proxyRules reads the node's Service rules for NodeAPI.CheckService: the
// proxy's nftables table as the kernel holds it in the kubelet's network
// namespace, which is the node's (the proxy runs there too). Read-only.
type proxyRules struct{ table string }

func (r proxyRules) Lookup(ports []server.ServicePort) ([]server.ServiceRule, error) {
	keys := make([]nftables.IPPortKey, len(ports))
	for i, p := range ports {
		proto, err := nftables.ParseProtocol(p.Protocol)
		if err != nil {
			return nil, err
		}
		keys[i] = nftables.IPPortKey{IP: p.IP, Protocol: proto, Port: p.Port}
	}
	rules, err := nftables.Lookup(r.table, 0, keys)
	if err != nil {
		return nil, err
	}
	out := make([]server.ServiceRule, len(rules))
	for i, r := range rules {
		out[i] = server.ServiceRule{Verdict: r.Verdict, Endpoints: r.Endpoints}
	}
	return out, nil
}
