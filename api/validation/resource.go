// The resource group (resource.k8s.io/v1): DeviceClass, ResourceClaim,
// ResourceClaimTemplate, with Kubernetes' rules and texts
// (pkg/apis/resource/validation). CEL selectors are stored as written and
// only checked for presence and length: Tugboat has no allocator that
// evaluates them.

package validation

import (
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Kubernetes' DRA limits (k8s.io/api/resource/v1).
const (
	DeviceSelectorsMaxSize             = 32
	DeviceConfigMaxSize                = 32
	CELSelectorExpressionMaxLength     = 10 * 1024
	OpaqueParametersMaxLength          = 10 * 1024
	DriverNameMaxLength                = 63
	DeviceRequestsMaxSize              = 32
	FirstAvailableDeviceRequestMaxSize = 8
	DeviceConstraintsMaxSize           = 32
	DeviceTolerationsMaxLength         = 16
	ResourceClaimReservedForMaxSize    = 256
)

// DeviceClass validates a device class.
func DeviceClass(c *v1.DeviceClass) Errs {
	var errs Errs
	ObjectMeta(&errs, c.Metadata, false, DNSSubdomain)
	s := c.GetSpec()
	if len(s.GetSelectors()) > DeviceSelectorsMaxSize {
		errs.Add("spec.selectors", "Too many: %d: must have at most %d items", len(s.GetSelectors()), DeviceSelectorsMaxSize)
	}
	for i, sel := range s.GetSelectors() {
		deviceSelector(&errs, fmt.Sprintf("spec.selectors[%d]", i), sel)
	}
	if len(s.GetConfig()) > DeviceConfigMaxSize {
		errs.Add("spec.config", "Too many: %d: must have at most %d items", len(s.GetConfig()), DeviceConfigMaxSize)
	}
	for i, cfg := range s.GetConfig() {
		opaqueConfig(&errs, fmt.Sprintf("spec.config[%d]", i), cfg.GetOpaque())
	}
	return errs
}

func deviceSelector(errs *Errs, path string, s *v1.DeviceSelector) {
	if s.GetCel() == nil {
		errs.Add(path+".cel", "Required value")
		return
	}
	expr := s.GetCel().GetExpression()
	switch {
	case expr == "":
		errs.Add(path+".cel.expression", "Required value")
	case len(expr) > CELSelectorExpressionMaxLength:
		errs.Add(path+".cel.expression", "Too long: may not be more than %d bytes", CELSelectorExpressionMaxLength)
	}
}

// opaqueConfig checks one driver's opaque parameters (path is the
// configuration entry; its "opaque" field is required).
func opaqueConfig(errs *Errs, path string, o *v1.OpaqueDeviceConfiguration) {
	if o == nil {
		errs.Add(path+".opaque", "Required value")
		return
	}
	driverName(errs, path+".opaque.driver", o.GetDriver())
	switch {
	case o.GetParameters() == nil:
		errs.Add(path+".opaque.parameters", "Required value")
	case proto.Size(o.GetParameters()) > OpaqueParametersMaxLength:
		errs.Add(path+".opaque.parameters", "Too long: may not be more than %d bytes", OpaqueParametersMaxLength)
	}
}

func driverName(errs *Errs, path, v string) {
	switch {
	case v == "":
		errs.Add(path, "Required value")
	case len(v) > DriverNameMaxLength:
		errs.Add(path, "Too long: may not be more than %d bytes", DriverNameMaxLength)
	default:
		DNSSubdomain(errs, path, v)
	}
}

// ResourceClaim validates a claim: its spec as ResourceClaimSpec does, and
// its status (written by UpdateStatus, which Tugboat's components never do:
// no allocator runs).
func ResourceClaim(c *v1.ResourceClaim) Errs {
	var errs Errs
	ObjectMeta(&errs, c.Metadata, true, DNSSubdomain)
	ResourceClaimSpec(&errs, "spec", c.GetSpec())
	st := c.GetStatus()
	if n := len(st.GetReservedFor()); n > ResourceClaimReservedForMaxSize {
		errs.Add("status.reservedFor", "Too many: %d: must have at most %d items", n, ResourceClaimReservedForMaxSize)
	}
	seen := map[string]bool{}
	for i, r := range st.GetReservedFor() {
		p := fmt.Sprintf("status.reservedFor[%d]", i)
		if r.GetResource() == "" {
			errs.Add(p+".resource", "Required value")
		}
		if r.GetName() == "" {
			errs.Add(p+".name", "Required value")
		}
		if r.GetUid() == "" {
			errs.Add(p+".uid", "Required value")
		} else if seen[r.GetUid()] {
			errs.Add(p+".uid", "Duplicate value: %q", r.GetUid())
		}
		seen[r.GetUid()] = true
	}
	if len(st.GetReservedFor()) > 0 && st.GetAllocation() == nil {
		errs.Add("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
	}
	return errs
}

// ResourceClaimUpdate: the spec is immutable, as in Kubernetes.
func ResourceClaimUpdate(old, new *v1.ResourceClaim) Errs {
	var errs Errs
	if !proto.Equal(old.GetSpec(), new.GetSpec()) {
		errs.Add("spec", "Invalid value: field is immutable")
	}
	return errs
}

// ResourceClaimSpec checks a claim's spec (a claim's, or a template's
// spec.spec) at path.
func ResourceClaimSpec(errs *Errs, path string, s *v1.ResourceClaimSpec) {
	d := s.GetDevices()
	dp := path + ".devices"
	if n := len(d.GetRequests()); n > DeviceRequestsMaxSize {
		errs.Add(dp+".requests", "Too many: %d: must have at most %d items", n, DeviceRequestsMaxSize)
	}
	// names are what constraints and config may refer to: each request,
	// and each request/subrequest.
	names := map[string]bool{}
	for i, r := range d.GetRequests() {
		p := fmt.Sprintf("%s.requests[%d]", dp, i)
		deviceRequest(errs, p, r)
		if r.GetName() != "" && names[r.GetName()] {
			errs.Add(p+".name", "Duplicate value: %q", r.GetName())
		}
		names[r.GetName()] = true
		for _, sub := range r.GetFirstAvailable() {
			names[r.GetName()+"/"+sub.GetName()] = true
		}
	}
	refs := func(p string, reqs []string) {
		seen := map[string]bool{}
		for i, name := range reqs {
			rp := fmt.Sprintf("%s.requests[%d]", p, i)
			switch {
			case seen[name]:
				errs.Add(rp, "Duplicate value: %q", name)
			case !names[name]:
				errs.Add(rp, "Invalid value: %q: must be the name of a request in the claim or the name of a request and a subrequest separated by '/'", name)
			}
			seen[name] = true
		}
	}
	if n := len(d.GetConstraints()); n > DeviceConstraintsMaxSize {
		errs.Add(dp+".constraints", "Too many: %d: must have at most %d items", n, DeviceConstraintsMaxSize)
	}
	for i, c := range d.GetConstraints() {
		p := fmt.Sprintf("%s.constraints[%d]", dp, i)
		refs(p, c.GetRequests())
		if c.MatchAttribute == nil {
			errs.Add(p+".matchAttribute", "Required value")
		} else {
			fullyQualifiedName(errs, p+".matchAttribute", c.GetMatchAttribute())
		}
	}
	if n := len(d.GetConfig()); n > DeviceConfigMaxSize {
		errs.Add(dp+".config", "Too many: %d: must have at most %d items", n, DeviceConfigMaxSize)
	}
	for i, c := range d.GetConfig() {
		p := fmt.Sprintf("%s.config[%d]", dp, i)
		refs(p, c.GetRequests())
		opaqueConfig(errs, p, c.GetOpaque())
	}
}

// deviceRequest checks one request: a DNS-label name and exactly one of
// exactly and firstAvailable.
func deviceRequest(errs *Errs, path string, r *v1.DeviceRequest) {
	requestName(errs, path+".name", r.GetName())
	switch {
	case r.GetExactly() != nil && len(r.GetFirstAvailable()) > 0:
		errs.Add(path, "Forbidden: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
	case r.GetExactly() == nil && len(r.GetFirstAvailable()) == 0:
		errs.Add(path, "Required value: exactly one of `exactly` or `firstAvailable` is required")
	}
	if e := r.GetExactly(); e != nil {
		p := path + ".exactly"
		exactRequest(errs, p, e.GetDeviceClassName(), e.GetSelectors(), e.GetAllocationMode(), e.GetCount(), e.GetTolerations())
		if e.GetAdminAccess() {
			// Kubernetes allows it only in namespaces labelled
			// resource.kubernetes.io/admin-access=true, a check
			// Tugboat's apiserver does not make: refused, not
			// half-served.
			errs.Add(p+".adminAccess", "Forbidden: admin access is not supported (Tugboat does not check the namespace label resource.kubernetes.io/admin-access, and runs no DRA driver)")
		}
	}
	subs := r.GetFirstAvailable()
	if len(subs) > FirstAvailableDeviceRequestMaxSize {
		errs.Add(path+".firstAvailable", "Too many: %d: must have at most %d items", len(subs), FirstAvailableDeviceRequestMaxSize)
	}
	seen := map[string]bool{}
	for i, s := range subs {
		p := fmt.Sprintf("%s.firstAvailable[%d]", path, i)
		requestName(errs, p+".name", s.GetName())
		if s.GetName() != "" && seen[s.GetName()] {
			errs.Add(p+".name", "Duplicate value: %q", s.GetName())
		}
		seen[s.GetName()] = true
		exactRequest(errs, p, s.GetDeviceClassName(), s.GetSelectors(), s.GetAllocationMode(), s.GetCount(), s.GetTolerations())
	}
}

func requestName(errs *Errs, path, v string) {
	if v == "" {
		errs.Add(path, "Required value")
		return
	}
	DNSLabel(errs, path, v)
}

// exactRequest checks what exactly and a firstAvailable entry share.
func exactRequest(errs *Errs, path, class string, selectors []*v1.DeviceSelector, mode string, count int64, tolerations []*v1.DeviceToleration) {
	if class == "" {
		errs.Add(path+".deviceClassName", "Required value")
	} else {
		DNSSubdomain(errs, path+".deviceClassName", class)
	}
	if len(selectors) > DeviceSelectorsMaxSize {
		errs.Add(path+".selectors", "Too many: %d: must have at most %d items", len(selectors), DeviceSelectorsMaxSize)
	}
	for i, sel := range selectors {
		deviceSelector(errs, fmt.Sprintf("%s.selectors[%d]", path, i), sel)
	}
	switch mode {
	case "All":
		if count != 0 {
			errs.Add(path+".count", "Invalid value: %d: must not be specified when allocationMode is 'All'", count)
		}
	case "ExactCount":
		if count <= 0 {
			errs.Add(path+".count", "Invalid value: %d: must be greater than zero", count)
		}
	default:
		errs.Add(path+".allocationMode", "Unsupported value: %q: supported values: \"All\", \"ExactCount\"", mode)
	}
	if len(tolerations) > DeviceTolerationsMaxLength {
		errs.Add(path+".tolerations", "Too many: %d: must have at most %d items", len(tolerations), DeviceTolerationsMaxLength)
	}
	for i, t := range tolerations {
		deviceToleration(errs, fmt.Sprintf("%s.tolerations[%d]", path, i), t)
	}
}

func deviceToleration(errs *Errs, path string, t *v1.DeviceToleration) {
	if t.GetKey() != "" {
		QualifiedName(errs, path+".key", t.GetKey())
	}
	switch t.GetOperator() {
	case "Exists":
		if t.GetValue() != "" {
			errs.Add(path+".value", "Invalid value: %q: must be empty when `operator` is 'Exists'", t.GetValue())
		}
	case "Equal":
		if t.GetKey() == "" {
			errs.Add(path+".operator", "Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"")
		}
	default:
		errs.Add(path+".operator", "Unsupported value: %q: supported values: \"Equal\", \"Exists\"", t.GetOperator())
	}
	switch t.GetEffect() {
	case "", "NoSchedule", "NoExecute":
	default:
		errs.Add(path+".effect", "Unsupported value: %q: supported values: \"NoExecute\", \"NoSchedule\"", t.GetEffect())
	}
	if t.TolerationSeconds != nil && t.GetEffect() != "NoExecute" {
		errs.Add(path+".effect", "Invalid value: %q: effect must be 'NoExecute' when `tolerationSeconds` is set", t.GetEffect())
	}
}

// fullyQualifiedName is a device attribute's name as a constraint names
// it: <domain>/<C identifier>, the domain a DNS subdomain of at most 63,
// the identifier at most 32.
func fullyQualifiedName(errs *Errs, path, v string) {
	domain, id, ok := strings.Cut(v, "/")
	if !ok || domain == "" {
		errs.Add(path, "Required value: must include a domain")
		return
	}
	if len(domain) > 63 {
		errs.Add(path, "Too long: the domain may not be more than 63 bytes")
	} else {
		DNSSubdomain(errs, path, domain)
	}
	switch {
	case id == "":
		errs.Add(path, "Required value: the name after the domain")
	case len(id) > 32:
		errs.Add(path, "Too long: the name may not be more than 32 bytes")
	case !cIdentifierRE.MatchString(id):
		errs.Add(path, "Invalid value: %q: a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')", id)
	}
}

var cIdentifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ResourceClaimTemplate validates a template: spec.spec as a claim's
// spec, spec.metadata's labels and annotations (the only metadata a claim
// made from it gets; other fields are refused rather than ignored).
func ResourceClaimTemplate(t *v1.ResourceClaimTemplate) Errs {
	var errs Errs
	ObjectMeta(&errs, t.Metadata, true, DNSSubdomain)
	if t.GetSpec() == nil {
		errs.Add("spec", "Required value")
		return errs
	}
	if m := t.GetSpec().GetMetadata(); m != nil {
		Labels(&errs, "spec.metadata.labels", m.GetLabels())
		Annotations(&errs, "spec.metadata.annotations", m.GetAnnotations())
		for field, set := range map[string]bool{"name": m.GetName() != "", "generateName": m.GetGenerateName() != "",
			"namespace": m.GetNamespace() != "", "ownerReferences": len(m.GetOwnerReferences()) > 0, "finalizers": len(m.GetFinalizers()) > 0} {
			if set {
				errs.Add("spec.metadata."+field, "Forbidden: not supported: a claim made from the template gets only its labels and annotations (the resourceclaim controller names it <pod>-<claim>-<random>, in the pod's namespace, owned by the pod)")
			}
		}
	}
	ResourceClaimSpec(&errs, "spec.spec", t.GetSpec().GetSpec())
	return errs
}

// ResourceClaimTemplateUpdate: the spec is immutable, as in Kubernetes.
func ResourceClaimTemplateUpdate(old, new *v1.ResourceClaimTemplate) Errs {
	var errs Errs
	if !proto.Equal(old.GetSpec(), new.GetSpec()) {
		errs.Add("spec", "Invalid value: field is immutable")
	}
	return errs
}
