// Package validation checks API objects before they are stored. Every
// function appends FieldErrors whose paths use the JSON names users write
// ("spec.containers[0].image"), so a refusal points at the line to fix.
// Validation runs after defaulting; it never changes the object.
//
// Files by API group, as api/kinds and api/v1 are: core.go and core_pod.go
// (v1), apps.go, autoscaling.go, batch.go, coordination.go, policy.go, rbac.go; a new kind's validation goes in
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

// IsEnvVarName reports whether s is a valid environment variable name, as
// a container's env requires (tugctl set env checks before it sends).
func IsEnvVarName(s string) bool { return envNameRE.MatchString(s) }

// MaxObjectBytes is etcd's own value size limit: larger objects are refused.
const MaxObjectBytes = 1536 * 1024

// Limits every kind shares, checked before anything is stored (the
// apiserver also refuses a request object over MaxObjectBytes before it
// decodes it, and storage an encoded value etcd would refuse).
const (
	// MaxNameLength caps every object name, whatever its kind's rule: a
	// DNS-1123 subdomain's length, as Kubernetes.
	MaxNameLength = 253
	// MaxLabelLength caps names that are DNS-1123 labels (namespaces,
	// Services, container and port names).
	MaxLabelLength = 63
	// MaxContainers caps a pod's containers, init containers included.
	MaxContainers = 100
	// MaxReplicas caps a workload's replicas: far above what a lab
	// cluster runs, far below what would fill etcd with pods.
	MaxReplicas = 10000
)

// Short quotes v for an error message, cut to its first 64 characters
// and its length when longer, so a huge value is not echoed back.
func Short(v string) string {
	if len(v) <= 64 {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q... (%d characters)", v[:64], len(v))
}

// DNSLabel checks a DNS-1123 label (namespaces, container and port names).
func DNSLabel(errs *Errs, path, v string) {
	switch {
	case v == "":
		errs.Add(path, "required")
	case len(v) > MaxLabelLength:
		errs.Add(path, "%s must be no more than %d characters (a DNS-1123 label)", Short(v), MaxLabelLength)
	case !dns1123LabelRE.MatchString(v):
		errs.Add(path, "%s must be a DNS-1123 label: at most 63 lower-case alphanumerics or '-', starting and ending alphanumeric", Short(v))
	}
}

// DNSSubdomain checks a DNS-1123 subdomain (most object names, node names).
func DNSSubdomain(errs *Errs, path, v string) {
	switch {
	case v == "":
		errs.Add(path, "required")
	case len(v) > MaxNameLength:
		errs.Add(path, "%s must be no more than %d characters (a DNS-1123 subdomain)", Short(v), MaxNameLength)
	case !dns1123SubdomainRE.MatchString(v):
		errs.Add(path, "%s must be a DNS-1123 subdomain: lower-case alphanumerics, '-' or '.', starting and ending alphanumeric, at most 253 characters", Short(v))
	}
}

// NodeName checks a node's name where it is given (join, the Node, a
// Bind's target, a tunnel): a DNS-1123 subdomain, as Kubernetes requires,
// so it is also safe in a certificate subject and a file name. It returns
// nil or an ErrInvalid naming path.
func NodeName(path, v string) error {
	var errs Errs
	DNSSubdomain(&errs, path, v)
	if len(errs) == 0 {
		return nil
	}
	return apierrors.Invalid(path, "%s", errs[0].Msg)
}

// NameLengths checks what every request naming an object shares, before
// it reaches storage: a name of at most MaxNameLength characters and a
// namespace of at most MaxLabelLength (longer ones cannot exist).
func NameLengths(ns, name string) error {
	if len(name) > MaxNameLength {
		return apierrors.Invalid("metadata.name", "%s must be no more than %d characters", Short(name), MaxNameLength)
	}
	if len(ns) > MaxLabelLength {
		return apierrors.Invalid("metadata.namespace", "%s must be no more than %d characters", Short(ns), MaxLabelLength)
	}
	return nil
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
	} else if len(m.Name) > MaxNameLength {
		// Whatever the kind's rule: names are etcd keys and file names.
		errs.Add("metadata.name", "%s must be no more than %d characters", Short(m.Name), MaxNameLength)
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
			errs.Add(fmt.Sprintf("%s[%s]", path, k), "value %s: %v", Short(v), err)
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

// IPv4 checks an IPv4 address.
func IPv4(errs *Errs, path, v string) {
	ip := net.ParseIP(v)
	switch {
	case ip == nil:
		errs.Add(path, "%s is not a valid IP address", Short(v))
	case ip.To4() == nil:
		errs.Add(path, "%q is an IPv6 address: this cluster is IPv4-only", v)
	}
}

// CIDR checks an IPv4 CIDR such as 10.0.0.0/24 (its address must be the
// network's, as Kubernetes requires of an ipBlock).
func CIDR(errs *Errs, path, v string) (*net.IPNet, bool) {
	ip, n, err := net.ParseCIDR(v)
	switch {
	case err != nil:
		errs.Add(path, "%s is not a valid CIDR such as 10.0.0.0/24", Short(v))
	case ip.To4() == nil:
		errs.Add(path, "%q is an IPv6 CIDR: this cluster is IPv4-only", v)
	case !ip.Equal(n.IP):
		errs.Add(path, "%q is not a network address: the bits after /%d must be zero (%s)", v, maskBits(n), n)
	default:
		return n, true
	}
	return nil, false
}

func maskBits(n *net.IPNet) int { ones, _ := n.Mask.Size(); return ones }

// QualifiedName checks a Kubernetes qualified name ("prefix/name" or
// "name", as label keys are).
func QualifiedName(errs *Errs, path, v string) {
	if err := labels.ValidateKey(v); err != nil {
		errs.Add(path, "%s: %v", Short(v), err)
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
