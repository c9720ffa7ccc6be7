package describe

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// describeEndpointSlice prints a slice as kubectl does: its ports, then
// each endpoint with its conditions, target and node.
func describeEndpointSlice(ctx context.Context, d *describer, s *v1.EndpointSlice) error {
	d.meta(s.GetMetadata(), true)
	d.kv(0, "AddressType", s.GetAddressType())
	if len(s.GetPorts()) == 0 {
		d.kv(0, "Ports", "<unset>")
	} else {
		d.text(0, "Ports:")
		d.text(1, "Name\tPort\tProtocol")
		d.text(1, "----\t----\t--------")
		for _, p := range s.GetPorts() {
			port := "<unset>"
			if p.Port != nil {
				port = strconv.Itoa(int(p.GetPort()))
			}
			d.text(1, "%s\t%s\t%s", cmp.Or(p.GetName(), "<unset>"), port, cmp.Or(p.GetProtocol(), "TCP"))
		}
	}
	if len(s.GetEndpoints()) == 0 {
		d.kv(0, "Endpoints", "<none>")
	} else {
		d.text(0, "Endpoints:")
		for _, e := range s.GetEndpoints() {
			d.kv(1, "- Addresses", strings.Join(e.GetAddresses(), ","))
			d.text(2, "Conditions:")
			c := e.GetConditions()
			d.kv(3, "Ready", condString(c.Ready))
			if c.Serving != nil || c.Terminating != nil {
				d.kv(3, "Serving", condString(c.Serving))
				d.kv(3, "Terminating", condString(c.Terminating))
			}
			d.kv(2, "Hostname", unset(e.Hostname))
			if r := e.GetTargetRef(); r != nil {
				d.kv(2, "TargetRef", fmt.Sprintf("%s/%s", r.GetKind(), r.GetName()))
			}
			d.kv(2, "NodeName", unset(e.NodeName))
			d.kv(2, "Zone", unset(e.Zone))
		}
	}
	return d.events(ctx, s)
}

func condString(b *bool) string {
	if b == nil {
		return "<unset>"
	}
	return strconv.FormatBool(*b)
}

func unset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}
