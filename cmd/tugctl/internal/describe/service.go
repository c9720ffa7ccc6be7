package describe

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/diagnose"
)

func describeService(ctx context.Context, d *describer, s *v1.Service) error {
	sp := s.GetSpec()
	d.meta(s.GetMetadata(), true)
	d.kv(0, "Selector", table.LabelString(sp.GetSelector()))
	d.kv(0, "Type", sp.GetType())
	if sp.GetType() != "ExternalName" {
		d.kv(0, "IP Family Policy", table.OrNone(sp.GetIpFamilyPolicy()))
		d.kv(0, "IP Families", table.OrNone(strings.Join(sp.GetIpFamilies(), ",")))
		d.kv(0, "IP", table.OrNone(sp.GetClusterIp()))
		d.kv(0, "IPs", table.OrNone(strings.Join(sp.GetClusterIps(), ",")))
	}
	if sp.GetLoadBalancerIp() != "" {
		d.kv(0, "Desired LoadBalancer IP", sp.GetLoadBalancerIp())
	}
	if sp.GetType() == "LoadBalancer" {
		d.kv(0, "LoadBalancer Ingress", table.ServiceExternalIP(s))
		if sp.GetLoadBalancerClass() != "" {
			d.kv(0, "LoadBalancer Class", sp.GetLoadBalancerClass())
		}
	}
	if sp.GetType() == "ExternalName" {
		d.kv(0, "External Name", sp.GetExternalName())
	}
	for _, p := range sp.GetPorts() {
		name := cmp.Or(p.Name, "<unset>")
		proto := cmp.Or(p.Protocol, "TCP")
		d.kv(0, "Port", fmt.Sprintf("%s  %d/%s", name, p.Port, proto))
		d.kv(0, "TargetPort", fmt.Sprintf("%s/%s", p.TargetPort, proto))
		if p.NodePort != 0 {
			d.kv(0, "NodePort", fmt.Sprintf("%s  %d/%s", name, p.NodePort, proto))
		}
	}
	b, err := diagnose.ServiceBackends(ctx, d.c, s)
	if err != nil {
		return err
	}
	eps := "<none>"
	if len(b.Ready) > 0 {
		eps = table.EndpointsList(b.Endpoints)
	}
	if b.Message != "" {
		eps += " (" + b.Message + ")"
	}
	d.kv(0, "Endpoints", eps)
	if len(b.NotReady) > 0 {
		d.kv(0, "NotReadyEndpoints", strings.Join(b.NotReady, ", "))
	}
	d.kv(0, "Session Affinity", cmp.Or(sp.GetSessionAffinity(), "None"))
	if sp.GetPublishNotReadyAddresses() {
		d.kv(0, "Publish Not Ready Addresses", "true")
	}
	if sp.GetExternalTrafficPolicy() != "" {
		d.kv(0, "External Traffic Policy", sp.GetExternalTrafficPolicy())
	}
	if sp.GetInternalTrafficPolicy() != "" {
		d.kv(0, "Internal Traffic Policy", sp.GetInternalTrafficPolicy())
	}
	if sp.GetHealthCheckNodePort() != 0 {
		d.kv(0, "HealthCheck NodePort", sp.GetHealthCheckNodePort())
	}
	return d.events(ctx, s)
}
