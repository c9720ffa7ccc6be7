package describe

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// describeIngressClass is kubectl's IngressClass description: the
// controller, the parameters reference, the events.
func describeIngressClass(ctx context.Context, d *describer, c *v1.IngressClass) error {
	m := c.GetMetadata()
	d.kv(0, "Name", m.GetName())
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	d.kv(0, "Controller", c.GetSpec().GetController())
	if p := c.GetSpec().GetParameters(); p != nil {
		d.text(0, "Parameters:")
		if p.ApiGroup != nil {
			d.kv(1, "APIGroup", p.GetApiGroup())
		}
		d.kv(1, "Kind", p.GetKind())
		d.kv(1, "Name", p.GetName())
		if p.Namespace != nil {
			d.kv(1, "Namespace", p.GetNamespace())
		}
		if p.Scope != nil {
			d.kv(1, "Scope", p.GetScope())
		}
	}
	return d.events(ctx, c)
}

// describeIngress is kubectl's describeIngressV1: address, class, default
// backend, TLS, the rules with each backend's endpoints (or the error
// that explains why there are none), annotations, events.
func describeIngress(ctx context.Context, d *describer, ing *v1.Ingress) error {
	m, s := ing.GetMetadata(), ing.GetSpec()
	d.kv(0, "Name", m.GetName())
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.kv(0, "Namespace", m.GetNamespace())
	d.kv(0, "Address", table.IngressAddress(ing.GetStatus().GetLoadBalancer(), true))
	class := "<none>"
	if s != nil && s.IngressClassName != nil {
		class = s.GetIngressClassName()
	}
	d.kv(0, "Ingress Class", class)
	if s.GetDefaultBackend() == nil {
		d.kv(0, "Default backend", "<default>")
	} else {
		d.kv(0, "Default backend", d.ingressBackend(ctx, m.GetNamespace(), s.GetDefaultBackend()))
	}
	if len(s.GetTls()) > 0 {
		d.text(0, "TLS:")
		for _, t := range s.GetTls() {
			if t.GetSecretName() == "" {
				d.text(1, "SNI routes %s", strings.Join(t.GetHosts(), ","))
			} else {
				d.text(1, "%s terminates %s", t.GetSecretName(), strings.Join(t.GetHosts(), ","))
			}
		}
	}
	d.text(0, "Rules:")
	d.text(1, "Host\tPath\tBackends")
	d.text(1, "----\t----\t--------")
	count := 0
	for _, r := range s.GetRules() {
		if r.GetHttp() == nil {
			continue
		}
		count++
		d.text(1, "%s\t", cmp.Or(r.GetHost(), "*"))
		for _, p := range r.GetHttp().GetPaths() {
			d.text(2, "\t%s \t%s", p.GetPath(), d.ingressBackend(ctx, m.GetNamespace(), p.GetBackend()))
		}
	}
	if count == 0 {
		d.text(1, "*\t*\t%s", d.ingressBackend(ctx, m.GetNamespace(), s.GetDefaultBackend()))
	}
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	return d.events(ctx, ing)
}

// ingressBackend is kubectl's describeBackendV1: "web:80 (10.244.1.2:8080,
// 10.244.2.3:8080)", with <none> or the error in the parentheses.
func (d *describer) ingressBackend(ctx context.Context, ns string, b *v1.IngressBackend) string {
	svc := b.GetService()
	if svc == nil {
		if r := b.GetResource(); r != nil {
			return fmt.Sprintf("APIGroup: %s, Kind: %s, Name: %s", r.GetApiGroup(), r.GetKind(), r.GetName())
		}
		return "<default>"
	}
	port := svc.GetPort().GetName()
	if n := svc.GetPort().GetNumber(); n != 0 {
		port = strconv.Itoa(int(n))
	}
	sb := svc.GetName() + ":" + port
	s, err := client.For[*v1.Service](d.c).Get(ctx, ns, svc.GetName())
	if err != nil {
		return fmt.Sprintf("%s (<error: %v>)", sb, err)
	}
	slices, _, err := client.For[*v1.EndpointSlice](d.c).List(ctx, client.ListOptions{Namespace: ns, LabelSelector: "kubernetes.io/service-name=" + svc.GetName()})
	if err != nil {
		return fmt.Sprintf("%s (<error: %v>)", sb, err)
	}
	portName := ""
	for _, p := range s.GetSpec().GetPorts() {
		if (svc.GetPort().GetNumber() != 0 && p.GetPort() == svc.GetPort().GetNumber()) || (svc.GetPort().GetName() != "" && p.GetName() == svc.GetPort().GetName()) {
			portName = p.GetName()
		}
	}
	var eps []string
	for _, sl := range slices {
		for _, p := range sl.GetPorts() {
			if p.GetName() != portName {
				continue
			}
			for _, e := range sl.GetEndpoints() {
				if c := e.GetConditions(); c != nil && c.Ready != nil && !c.GetReady() {
					continue
				}
				for _, a := range e.GetAddresses() {
					eps = append(eps, fmt.Sprintf("%s:%d", a, p.GetPort()))
				}
			}
		}
	}
	switch {
	case len(eps) == 0:
		return sb + " (<none>)"
	case len(eps) > 3:
		return fmt.Sprintf("%s (%s + %d more...)", sb, strings.Join(eps[:3], ","), len(eps)-3)
	}
	return sb + " (" + strings.Join(eps, ",") + ")"
}
