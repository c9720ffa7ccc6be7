package pod

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Service environment variables, as Kubernetes sets them (its envvars
// package): for each Service with a cluster IP in the pod's namespace
// (unless spec.enableServiceLinks is false), and for the API's own
// "kubernetes" Service in default always, both
//
//	FOO_SERVICE_HOST=10.96.0.11  FOO_SERVICE_PORT=80  FOO_SERVICE_PORT_HTTP=80
//
// and the Docker-link style
//
//	FOO_PORT=tcp://10.96.0.11:80  FOO_PORT_80_TCP=tcp://10.96.0.11:80
//	FOO_PORT_80_TCP_PROTO=tcp  FOO_PORT_80_TCP_PORT=80  FOO_PORT_80_TCP_ADDR=10.96.0.11
//
// where FOO is the Service's name upper-cased with '-' as '_'. A
// container's own env and envFrom win over them; $(FOO_SERVICE_HOST) may
// be used in its values.

// masterService is the API's Service, passed to every pod.
const masterServiceNamespace, masterServiceName = "default", "kubernetes"

// serviceEnv returns the variables for the Services visible to pod (from
// the node's cache of Services: all of them, any namespace).
func serviceEnv(pod *v1.Pod, services []*v1.Service) map[string]string {
	ns := pod.GetMetadata().GetNamespace()
	links := pod.GetSpec().EnableServiceLinks == nil || pod.GetSpec().GetEnableServiceLinks()
	picked := map[string]*v1.Service{} // by name: the pod's namespace's own wins over the master
	for _, s := range services {
		ip := s.GetSpec().GetClusterIp()
		if ip == "" || ip == "None" {
			continue
		}
		m := s.GetMetadata()
		switch {
		case m.GetNamespace() == masterServiceNamespace && m.GetName() == masterServiceName:
			if _, ok := picked[m.GetName()]; !ok {
				picked[m.GetName()] = s
			}
		case m.GetNamespace() == ns && links:
			picked[m.GetName()] = s
		}
	}
	out := map[string]string{}
	for n, s := range picked {
		ports := s.GetSpec().GetPorts()
		if len(ports) == 0 {
			continue
		}
		prefix := envName(n)
		ip := s.GetSpec().GetClusterIp()
		out[prefix+"_SERVICE_HOST"] = ip
		out[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(ports[0].GetPort()))
		for i, p := range ports {
			port := strconv.Itoa(int(p.GetPort()))
			if p.GetName() != "" {
				out[prefix+"_SERVICE_PORT_"+envName(p.GetName())] = port
			}
			proto := strings.ToLower(p.GetProtocol())
			if proto == "" {
				proto = "tcp"
			}
			url := fmt.Sprintf("%s://%s", proto, net.JoinHostPort(ip, port))
			if i == 0 {
				out[prefix+"_PORT"] = url
			}
			pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
			out[pp] = url
			out[pp+"_PROTO"] = proto
			out[pp+"_PORT"] = port
			out[pp+"_ADDR"] = ip
		}
	}
	return out
}

// envName makes a Service or port name a variable name part.
func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
