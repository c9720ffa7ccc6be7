// The networking group (networking.k8s.io/v1): IngressClass and Ingress,
// with Kubernetes' rules (pkg/apis/networking/validation) and texts.

package validation

import (
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
