package validation

import (
	"slices"
	"strconv"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// The values of volumeMounts[].mountPropagation and recursiveReadOnly,
// sorted as Kubernetes lists them in its Unsupported value message.
var (
	mountPropagations  = []string{"Bidirectional", "HostToContainer", "None"}
	recursiveReadOnlys = []string{"Disabled", "Enabled", "IfPossible"}
)

// volumeMountPropagation checks a volume mount's mountPropagation and
// recursiveReadOnly with Kubernetes' rules and texts
// (validateMountPropagation, validateMountRecursiveReadOnly):
// Bidirectional only in a privileged container; recursiveReadOnly
// IfPossible or Enabled only on a readOnly mount whose propagation is
// None or unset.
func volumeMountPropagation(errs *Errs, path string, m *v1.VolumeMount, privileged bool) {
	if m.MountPropagation != nil {
		mp := m.GetMountPropagation()
		if !slices.Contains(mountPropagations, mp) {
			errs.Add(path+".mountPropagation", "Unsupported value: %q: supported values: %s", mp, quotedList(mountPropagations))
		}
		if mp == "Bidirectional" && !privileged {
			errs.Add(path+".mountPropagation", "Forbidden: Bidirectional mount propagation is available only to privileged containers")
		}
	}
	if m.RecursiveReadOnly == nil {
		return
	}
	rp := path + ".recursiveReadOnly"
	switch rro := m.GetRecursiveReadOnly(); rro {
	case "Disabled":
	case "Enabled", "IfPossible":
		if !m.ReadOnly {
			errs.Add(rp, "Forbidden: may only be specified when readOnly is true")
		}
		if m.MountPropagation != nil && m.GetMountPropagation() != "None" {
			errs.Add(rp, "Forbidden: may only be specified when mountPropagation is None or not specified")
		}
	default:
		errs.Add(rp, "Unsupported value: %q: supported values: %s", rro, quotedList(recursiveReadOnlys))
	}
}

// quotedList is `"a", "b"`, as Kubernetes' field.NotSupported lists
// the supported values.
func quotedList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}
