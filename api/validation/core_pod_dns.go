package validation

import (
	"fmt"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Limits of a pod's DNS configuration, as Kubernetes has them.
const (
	maxDNSNameservers   = 3
	maxDNSSearches      = 32
	maxDNSSearchesChars = 2048
)

// podDNS checks spec.dnsPolicy, spec.dnsConfig and spec.hostAliases.
func podDNS(errs *Errs, path string, s *v1.PodSpec) {
	if s.DnsPolicy != "" {
		OneOf(errs, path+".dnsPolicy", s.DnsPolicy, "ClusterFirst", "Default", "None", "ClusterFirstWithHostNet")
	}
	for i, a := range s.HostAliases {
		ap := fmt.Sprintf("%s.hostAliases[%d]", path, i)
		IP(errs, ap+".ip", a.Ip)
		if len(a.Hostnames) == 0 {
			errs.Add(ap+".hostnames", "Required value: at least one hostname")
		}
		for j, h := range a.Hostnames {
			DNSSubdomain(errs, fmt.Sprintf("%s.hostnames[%d]", ap, j), h)
		}
	}
	dc := s.DnsConfig
	if s.DnsPolicy == "None" && len(dc.GetNameservers()) == 0 {
		errs.Add(path+".dnsConfig.nameservers", "Required value: must provide at least one DNS nameserver when DNS policy is None")
	}
	if dc == nil {
		return
	}
	dp := path + ".dnsConfig"
	if len(dc.Nameservers) > maxDNSNameservers {
		errs.Add(dp+".nameservers", "Invalid value: %q: must not have more than %d nameservers", dc.Nameservers, maxDNSNameservers)
	}
	for i, ns := range dc.Nameservers {
		IP(errs, fmt.Sprintf("%s.nameservers[%d]", dp, i), ns)
	}
	if len(dc.Searches) > maxDNSSearches {
		errs.Add(dp+".searches", "Invalid value: %q: must not have more than %d search paths", dc.Searches, maxDNSSearches)
	}
	if n := len(strings.Join(dc.Searches, " ")); n > maxDNSSearchesChars {
		errs.Add(dp+".searches", "Invalid value: must not have more than %d characters (including spaces) in the search list (has %d)", maxDNSSearchesChars, n)
	}
	for i, d := range dc.Searches {
		if d == "." {
			continue // the root domain, as Kubernetes allows
		}
		DNSSubdomain(errs, fmt.Sprintf("%s.searches[%d]", dp, i), strings.TrimSuffix(d, "."))
	}
	for i, o := range dc.Options {
		if o.Name == "" {
			errs.Add(fmt.Sprintf("%s.options[%d].name", dp, i), "Required value: must not be empty")
		}
		if strings.ContainsAny(o.Name+o.GetValue(), " \t\r\n:") && o.Name != "" {
			errs.Add(fmt.Sprintf("%s.options[%d]", dp, i), "Invalid value: %q: must not contain white space or ':'", o.Name)
		}
	}
}
