package table

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// discovery is the tables of the discovery.k8s.io group.
var discovery = map[string]def{
	"EndpointSlice": kindDef(endpointSliceColumns, endpointSliceCells),
}

var endpointSliceColumns = []Column{
	nameColumn,
	{Name: "AddressType", Type: "string", Description: "Type of the addresses (addressType)."},
	{Name: "Ports", Type: "string", Description: "The slice's ports (ports[].port), or <unset>."},
	{Name: "Endpoints", Type: "string", Description: "The first three endpoint addresses and how many more there are."},
	ageColumn,
}

func endpointSliceCells(s *v1.EndpointSlice, now time.Time) []any {
	return []any{s.Metadata.GetName(), s.GetAddressType(), slicePorts(s), SliceAddresses(s), Age(s.Metadata.GetCreationTimestamp(), now)}
}

// slicePorts is kubectl's PORTS cell: "80,443", "<unset>" for a port
// without a number.
func slicePorts(s *v1.EndpointSlice) string {
	if len(s.GetPorts()) == 0 {
		return "<unset>"
	}
	out := make([]string, len(s.GetPorts()))
	for i, p := range s.GetPorts() {
		if p.Port == nil {
			out[i] = "<unset>"
		} else {
			out[i] = strconv.Itoa(int(p.GetPort()))
		}
	}
	return strings.Join(out, ",")
}

// SliceAddresses is the ENDPOINTS cell of a slice: its first three
// addresses and how many more there are, or "<unset>".
func SliceAddresses(s *v1.EndpointSlice) string {
	var addrs []string
	for _, e := range s.GetEndpoints() {
		addrs = append(addrs, e.GetAddresses()...)
	}
	if len(addrs) == 0 {
		return "<unset>"
	}
	cell := strings.Join(addrs[:min(3, len(addrs))], ",")
	if len(addrs) > 3 {
		cell += fmt.Sprintf(" + %d more...", len(addrs)-3)
	}
	return cell
}
