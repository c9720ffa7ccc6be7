// The resource group (resource.k8s.io/v1): DeviceClass, ResourceClaim,
// ResourceClaimTemplate, with Kubernetes' rules and texts
// (pkg/apis/resource/validation). CEL selectors are stored as written and
// only checked for presence and length: Tugboat has no allocator that
// evaluates them.

package validation

import (
	"fmt"

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
