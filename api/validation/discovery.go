// The discovery group (discovery.k8s.io/v1): EndpointSlice.

package validation

import (
	"fmt"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Limits of an EndpointSlice, Kubernetes' own.
const (
	MaxEndpointsPerSlice    = 1000
	MaxAddressesPerEndpoint = 100
	MaxPortsPerSlice        = 100
	MaxZoneHints            = 8
)

// EndpointSlice validates an endpoint slice. The cluster is IPv4-only and
// its proxy serves address slices only, so addressType IPv6 and FQDN are
// refused by name.
func EndpointSlice(s *v1.EndpointSlice) Errs {
	var errs Errs
	ObjectMeta(&errs, s.Metadata, true, DNSSubdomain)
	switch s.AddressType {
	case "":
		errs.Add("addressType", "required")
	case "IPv4":
	case "IPv6":
		errs.Add("addressType", "\"IPv6\": this cluster is IPv4-only")
	case "FQDN":
		errs.Add("addressType", "\"FQDN\": not supported (Tugboat's proxy serves IPv4 slices only)")
	default:
		OneOf(&errs, "addressType", s.AddressType, "IPv4", "IPv6", "FQDN")
	}
	if len(s.Endpoints) > MaxEndpointsPerSlice {
		errs.Add("endpoints", "must have at most %d items, has %d", MaxEndpointsPerSlice, len(s.Endpoints))
	}
	for i, e := range s.Endpoints {
		p := fmt.Sprintf("endpoints[%d]", i)
		switch n := len(e.Addresses); {
		case n == 0:
			errs.Add(p+".addresses", "must contain at least 1 address")
		case n > MaxAddressesPerEndpoint:
			errs.Add(p+".addresses", "must have at most %d items, has %d", MaxAddressesPerEndpoint, n)
		}
		for j, a := range e.Addresses {
			IPv4(&errs, fmt.Sprintf("%s.addresses[%d]", p, j), a)
		}
		if e.Hostname != nil {
			DNSLabel(&errs, p+".hostname", *e.Hostname)
		}
		if e.NodeName != nil {
			DNSSubdomain(&errs, p+".nodeName", *e.NodeName)
		}
		if len(e.GetHints().GetForZones()) > MaxZoneHints {
			errs.Add(p+".hints.forZones", "must have at most %d items", MaxZoneHints)
		}
		if len(e.GetHints().GetForNodes()) > 0 {
			errs.Add(p+".hints.forNodes", "not supported: Tugboat's proxy does not route by node hints")
		}
	}
	if len(s.Ports) > MaxPortsPerSlice {
		errs.Add("ports", "must have at most %d items, has %d", MaxPortsPerSlice, len(s.Ports))
	}
	names := map[string]bool{}
	for i, port := range s.Ports {
		p := fmt.Sprintf("ports[%d]", i)
		if n := port.GetName(); n != "" {
			DNSLabel(&errs, p+".name", n)
		}
		if names[port.GetName()] {
			errs.Add(p+".name", "Duplicate value: %q", port.GetName())
		}
		names[port.GetName()] = true
		if port.Protocol != nil {
			OneOf(&errs, p+".protocol", *port.Protocol, "TCP", "UDP")
		}
		if port.Port != nil && (*port.Port < 0 || *port.Port > 65535) {
			errs.Add(p+".port", "%d is not a valid port (0-65535)", *port.Port)
		}
	}
	return errs
}

// EndpointSliceUpdate: addressType may not change.
func EndpointSliceUpdate(old, new *v1.EndpointSlice) Errs {
	var errs Errs
	if old.AddressType != new.AddressType {
		errs.Add("addressType", "field is immutable")
	}
	return errs
}
