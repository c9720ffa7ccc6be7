// The networking group (networking.k8s.io/v1): IngressClass and Ingress,
// with Kubernetes' rules (pkg/apis/networking/validation) and texts.

package validation

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

const (
	// IngressController is the controller of the classes the proxies serve
	// (proxy/ingress).
	IngressController = "tugboat.dev/ingress-controller"
	// DefaultIngressClassAnnotation marks the class filled in on create
	// into Ingresses without spec.ingressClassName (Kubernetes' name).
	DefaultIngressClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
	// IngressClassAnnotation is the deprecated way to name an Ingress's
	// class; it may not be set together with spec.ingressClassName.
	IngressClassAnnotation = "kubernetes.io/ingress.class"
)

var (
	httpPathRE          = regexp.MustCompile(`^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$`)
	wildcardSubdomainRE = regexp.MustCompile(`^\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// IngressClass validates a class: a domain-prefixed controller, and the
// parameters reference's rules; Tugboat's own controller takes no
// parameters (refused by name rather than ignored).
func IngressClass(c *v1.IngressClass) Errs {
	var errs Errs
	ObjectMeta(&errs, c.Metadata, false, DNSSubdomain)
	s := c.GetSpec()
	switch {
	case s.GetController() == "":
		errs.Add("spec.controller", "Required value")
	case len(s.GetController()) > 250:
		errs.Add("spec.controller", "Too long: may not be more than 250 bytes")
	default:
		domainPrefixedPath(&errs, "spec.controller", s.GetController())
	}
	if p := s.GetParameters(); p != nil {
		path := "spec.parameters"
		if s.GetController() == IngressController {
			errs.Add(path, "Forbidden: %s takes no parameters", IngressController)
		}
		if p.Kind == "" {
			errs.Add(path+".kind", "Required value")
		}
		if p.Name == "" {
			errs.Add(path+".name", "Required value")
		}
		if p.ApiGroup != nil && *p.ApiGroup != "" {
			DNSSubdomain(&errs, path+".apiGroup", *p.ApiGroup)
		}
		switch scope := p.GetScope(); {
		case p.Scope == nil:
			errs.Add(path+".scope", "Required value")
		case scope != "Cluster" && scope != "Namespace":
			errs.Add(path+".scope", "Unsupported value: %q: supported values: \"Cluster\", \"Namespace\"", scope)
		case scope == "Namespace" && p.Namespace == nil:
			errs.Add(path+".namespace", "Required value: `parameters.scope` is set to 'Namespace'")
		case scope == "Namespace":
			DNSLabel(&errs, path+".namespace", p.GetNamespace())
		case p.Namespace != nil:
			errs.Add(path+".namespace", "Forbidden: `parameters.scope` is set to 'Cluster'")
		}
	}
	return errs
}

// IngressClassUpdate keeps the controller fixed, as Kubernetes.
func IngressClassUpdate(old, new *v1.IngressClass) Errs {
	var errs Errs
	if old.GetSpec().GetController() != new.GetSpec().GetController() {
		errs.Add("spec.controller", "Invalid value: %q: field is immutable", new.GetSpec().GetController())
	}
	return errs
}

// domainPrefixedPath is Kubernetes' IsDomainPrefixedPath ("acme.io/foo").
func domainPrefixedPath(errs *Errs, path, v string) {
	host, rest, ok := strings.Cut(v, "/")
	if !ok || host == "" || rest == "" {
		errs.Add(path, "Invalid value: %q: must be a domain-prefixed path (such as \"acme.io/foo\")", v)
		return
	}
	DNSSubdomain(errs, path, host)
	if !httpPathRE.MatchString(rest) {
		errs.Add(path, "Invalid value: %q: Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%%!$&'()*+,;=:]+')", rest)
	}
}

// Ingress validates an Ingress with Kubernetes' rules and texts
// (ValidateIngressSpec): a rule or a defaultBackend; hosts DNS names, not
// IPs, a wildcard only as "*." and a subdomain; paths with a pathType,
// absolute for Exact and Prefix; backends a Service with a port name or
// number. Resource backends are refused: no controller here serves them.
func Ingress(ing *v1.Ingress) Errs {
	var errs Errs
	ObjectMeta(&errs, ing.Metadata, true, DNSSubdomain)
	s := ing.GetSpec()
	if s == nil || (len(s.Rules) == 0 && s.DefaultBackend == nil) {
		errs.Add("spec", "Invalid value: either `defaultBackend` or `rules` must be specified")
		return errs
	}
	if s.IngressClassName != nil {
		DNSSubdomain(&errs, "spec.ingressClassName", s.GetIngressClassName())
		if _, ok := ing.GetMetadata().GetAnnotations()[IngressClassAnnotation]; ok {
			errs.Add("metadata.annotations."+IngressClassAnnotation, "Invalid value: can not be set when the class field is also set")
		}
	}
	if s.DefaultBackend != nil {
		ingressBackend(&errs, "spec.defaultBackend", s.DefaultBackend)
	}
	for i, r := range s.Rules {
		path := fmt.Sprintf("spec.rules[%d]", i)
		if r.Host != "" {
			ingressHost(&errs, path+".host", r.Host)
		}
		if r.Http == nil {
			// A rule without http (Kubernetes allows it: a host with
			// no paths) routes nothing; refused so it is not ignored.
			errs.Add(path+".http", "Required value: a rule without http routes nothing")
			continue
		}
		if len(r.Http.Paths) == 0 {
			errs.Add(path+".http.paths", "Required value")
		}
		for j, p := range r.Http.Paths {
			ingressPath(&errs, fmt.Sprintf("%s.http.paths[%d]", path, j), p)
		}
	}
	for i, t := range s.Tls {
		path := fmt.Sprintf("spec.tls[%d]", i)
		for j, h := range t.Hosts {
			ingressHost(&errs, fmt.Sprintf("%s.hosts[%d]", path, j), h)
		}
		if t.SecretName != "" {
			DNSSubdomain(&errs, path+".secretName", t.SecretName)
		}
	}
	ingressStatus(&errs, ing.GetStatus())
	return errs
}

// ingressHost is Kubernetes' host rule: not an IP; "*." and a DNS-1123
// subdomain when it holds a '*', else a DNS-1123 subdomain.
func ingressHost(errs *Errs, path, host string) {
	if _, err := netip.ParseAddr(host); err == nil {
		errs.Add(path, "Invalid value: %q: must be a DNS name, not an IP address", host)
		return
	}
	if strings.Contains(host, "*") {
		if len(host) > MaxNameLength || !wildcardSubdomainRE.MatchString(host) {
			errs.Add(path, "Invalid value: %q: a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')", host)
		}
		return
	}
	DNSSubdomain(errs, path, host)
}

var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

// ingressPath is Kubernetes' validateHTTPIngressPath.
func ingressPath(errs *Errs, path string, p *v1.HTTPIngressPath) {
	if p.PathType == nil {
		errs.Add(path+".pathType", "Required value: pathType must be specified")
	} else {
		switch t := p.GetPathType(); t {
		case "Exact", "Prefix":
			if !strings.HasPrefix(p.Path, "/") {
				errs.Add(path+".path", "Invalid value: %q: must be an absolute path", p.Path)
			}
			for _, seq := range invalidPathSequences {
				if strings.Contains(p.Path, seq) {
					errs.Add(path+".path", "Invalid value: %q: must not contain '%s'", p.Path, seq)
				}
			}
			for _, suf := range invalidPathSuffixes {
				if strings.HasSuffix(p.Path, suf) {
					errs.Add(path+".path", "Invalid value: %q: cannot end with '%s'", p.Path, suf)
				}
			}
		case "ImplementationSpecific":
			if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
				errs.Add(path+".path", "Invalid value: %q: must be an absolute path", p.Path)
			}
		default:
			errs.Add(path+".pathType", "Unsupported value: %q: supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\"", t)
		}
	}
	if p.Backend == nil {
		errs.Add(path+".backend", "Invalid value: \"\": resource or service backend is required")
		return
	}
	ingressBackend(errs, path+".backend", p.Backend)
}

// ingressBackend is Kubernetes' validateIngressBackend, with resource
// backends refused.
func ingressBackend(errs *Errs, path string, b *v1.IngressBackend) {
	switch {
	case b.Resource != nil && b.Service != nil:
		errs.Add(path, "Invalid value: \"\": cannot set both resource and service backends")
	case b.Resource != nil:
		errs.Add(path+".resource", "Unsupported value: resource backends (%s %q) are not served by %s: use a service backend",
			b.Resource.GetKind(), b.Resource.GetName(), IngressController)
	case b.Service != nil:
		svc := b.Service
		if svc.Name == "" {
			errs.Add(path+".service.name", "Required value")
		} else {
			DNSLabel(errs, path+".service.name", svc.Name)
		}
		name, number := svc.GetPort().GetName(), svc.GetPort().GetNumber()
		switch {
		case name != "" && number != 0:
			errs.Add(path, "Invalid value: \"\": cannot set both port name & port number")
		case name != "":
			if len(name) > 15 || !portNameRE.MatchString(name) {
				errs.Add(path+".service.port.name", "Invalid value: %q: must be an IANA_SVC_NAME (at most 15 characters, lower case alphanumeric characters or '-')", name)
			}
		case number != 0:
			if number < 1 || number > 65535 {
				errs.Add(path+".service.port.number", "Invalid value: %d: must be between 1 and 65535, inclusive", number)
			}
		default:
			errs.Add(path+".service.port", "Required value: port name or number is required")
		}
	default:
		errs.Add(path, "Invalid value: \"\": resource or service backend is required")
	}
}

// ingressStatus checks the load-balancer addresses (Kubernetes'
// ValidateIngressLoadBalancerStatus).
func ingressStatus(errs *Errs, st *v1.IngressStatus) {
	for i, in := range st.GetLoadBalancer().GetIngress() {
		path := fmt.Sprintf("status.loadBalancer.ingress[%d]", i)
		if in.Ip != "" {
			if _, err := netip.ParseAddr(in.Ip); err != nil {
				errs.Add(path+".ip", "Invalid value: %q: must be a valid IP address", in.Ip)
			}
		}
		if in.Hostname != "" {
			DNSSubdomain(errs, path+".hostname", in.Hostname)
			if _, err := netip.ParseAddr(in.Hostname); err == nil {
				errs.Add(path+".hostname", "Invalid value: %q: must be a DNS name, not an IP address", in.Hostname)
			}
		}
	}
}
