// Package validation checks API objects before they are stored. Every
// function appends FieldErrors whose paths use the JSON names users write
// ("spec.containers[0].image"), so a refusal points at the line to fix.
// Validation runs after defaulting; it never changes the object.
//
// Files by API group, as api/kinds and api/v1 are: core.go and core_pod.go
// (v1), apps.go, batch.go, coordination.go, rbac.go; a new kind's validation goes in
// its group's file (a new group's in a new one). meta.go holds what every
// kind shares: metadata, names, labels, ports, quantities.
package validation

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Errs is the list every validator appends to.
type Errs = apierrors.FieldErrors

var (
	dns1123LabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123SubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	configKeyRE        = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
	envNameRE          = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
	portNameRE         = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// MaxObjectBytes is etcd's own value size limit: larger objects are refused.
const MaxObjectBytes = 1536 * 1024

// DNSLabel checks a DNS-1123 label (namespaces, container and port names).
func DNSLabel(errs *Errs, path, v string) {
	if v == "" {
		errs.Add(path, "required")
		return
	}
	if len(v) > 63 || !dns1123LabelRE.MatchString(v) {
		errs.Add(path, "%q must be a DNS-1123 label: at most 63 lower-case alphanumerics or '-', starting and ending alphanumeric", v)
	}
}

// DNSSubdomain checks a DNS-1123 subdomain (most object names).
func DNSSubdomain(errs *Errs, path, v string) {
	if v == "" {
		errs.Add(path, "required")
		return
	}
	if len(v) > 253 || !dns1123SubdomainRE.MatchString(v) {
		errs.Add(path, "%q must be a DNS-1123 subdomain: lower-case alphanumerics, '-' or '.', starting and ending alphanumeric, at most 253 characters", v)
	}
}

// NameRule says how a kind's names are checked.
type NameRule func(errs *Errs, path, v string)

// ObjectMeta checks name, namespace, labels, annotations and owner references.
func ObjectMeta(errs *Errs, m *v1.ObjectMeta, namespaced bool, name NameRule) {
	if m == nil {
		errs.Add("metadata", "required")
		return
	}
	if m.Name == "" && m.GenerateName != "" {
		// The apiserver fills the name before validation; a bad prefix shows here.
		errs.Add("metadata.name", "required (generateName was not expanded)")
	} else {
		name(errs, "metadata.name", m.Name)
	}
	if namespaced {
		DNSLabel(errs, "metadata.namespace", m.Namespace)
	} else if m.Namespace != "" {
		errs.Add("metadata.namespace", "must be empty: this kind is not namespaced")
	}
	Labels(errs, "metadata.labels", m.Labels)
	Annotations(errs, "metadata.annotations", m.Annotations)
	for i, o := range m.OwnerReferences {
		p := fmt.Sprintf("metadata.ownerReferences[%d]", i)
		if o.Kind == "" {
			errs.Add(p+".kind", "required")
		}
		if o.Name == "" {
			errs.Add(p+".name", "required")
		}
		if o.Uid == "" {
			errs.Add(p+".uid", "required")
		}
	}
	controllers := 0
	for _, o := range m.OwnerReferences {
		if o.Controller {
			controllers++
		}
	}
	if controllers > 1 {
		errs.Add("metadata.ownerReferences", "only one reference may have controller=true")
	}
}

// Labels checks keys and values of a label map.
func Labels(errs *Errs, path string, l map[string]string) {
	for k, v := range l {
		if err := labels.ValidateKey(k); err != nil {
			errs.Add(fmt.Sprintf("%s[%s]", path, k), "key: %v", err)
		}
		if err := labels.ValidateValue(v); err != nil {
			errs.Add(fmt.Sprintf("%s[%s]", path, k), "value %q: %v", v, err)
		}
	}
}

// Annotations checks annotation keys and their total size.
func Annotations(errs *Errs, path string, a map[string]string) {
	size := 0
	for k, v := range a {
		if err := labels.ValidateKey(k); err != nil {
			errs.Add(fmt.Sprintf("%s[%s]", path, k), "%v", err)
		}
		size += len(k) + len(v)
	}
	if size > 256*1024 {
		errs.Add(path, "total size %d exceeds 262144 bytes", size)
	}
}

// LabelSelector checks an apps/v1 selector; it must select something.
func LabelSelector(errs *Errs, path string, s *v1.LabelSelector) {
	if s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		errs.Add(path, "required: a selector must have matchLabels or matchExpressions")
		return
	}
	Labels(errs, path+".matchLabels", s.MatchLabels)
	if _, err := labels.FromLabelSelector(s); err != nil {
		errs.Add(path, "%v", err)
	}
}

// OneOf checks that v is one of allowed.
func OneOf(errs *Errs, path, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	errs.Add(path, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

// Port checks a port number.
func Port(errs *Errs, path string, p int32) {
	if p < 1 || p > 65535 {
		errs.Add(path, "%d is not a valid port (1-65535)", p)
	}
}

// IntOrName checks a port given as a number or an IANA service name.
func IntOrName(errs *Errs, path, v string) {
	if v == "" {
		errs.Add(path, "required")
		return
	}
	if n, err := strconv.Atoi(v); err == nil {
		Port(errs, path, int32(n))
		return
	}
	if len(v) > 15 || !portNameRE.MatchString(v) {
		errs.Add(path, "%q must be a port number or a port name (at most 15 lower-case alphanumerics or '-')", v)
	}
}

// IntOrPercent checks "1" or "25%"; capped limits percentages to 100%.
func IntOrPercent(errs *Errs, path, v string, capped bool) {
	s := strings.TrimSuffix(v, "%")
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		errs.Add(path, "%q must be a non-negative number or percentage such as 1 or 25%%", v)
		return
	}
	if capped && strings.HasSuffix(v, "%") && n > 100 {
		errs.Add(path, "%q must not exceed 100%%", v)
	}
}

// IP checks an IP address.
func IP(errs *Errs, path, v string) {
	if net.ParseIP(v) == nil {
		errs.Add(path, "%q is not a valid IP address", v)
	}
}

// ConfigKeys checks ConfigMap/Secret keys.
func ConfigKeys[V any](errs *Errs, path string, m map[string]V) {
	for k := range m {
		if len(k) > 253 || !configKeyRE.MatchString(k) {
			errs.Add(fmt.Sprintf("%s[%s]", path, k), "key must consist of alphanumerics, '-', '_' or '.'")
		}
	}
}
