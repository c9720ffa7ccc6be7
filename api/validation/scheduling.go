package validation

import (
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Priority limits, Kubernetes': user classes at most
// HighestUserDefinablePriority; the system classes above it.
const (
	HighestUserDefinablePriority = 1000000000
	SystemCriticalPriority       = 2 * HighestUserDefinablePriority
)

// SystemPriorityClasses are the classes the apiserver makes, by name.
var SystemPriorityClasses = map[string]int32{
	"system-cluster-critical": SystemCriticalPriority,
	"system-node-critical":    SystemCriticalPriority + 1000,
}

// PriorityClass validates a priority class.
func PriorityClass(pc *v1.PriorityClass) Errs {
	var errs Errs
	ObjectMeta(&errs, pc.Metadata, false, DNSSubdomain)
	name := pc.GetMetadata().GetName()
	if v, system := SystemPriorityClasses[name]; system {
		if pc.Value != v {
			errs.Add("value", "%d: the system class %s has value %d", pc.Value, name, v)
		}
	} else {
		if strings.HasPrefix(name, "system-") {
			errs.Add("metadata.name", "%q: the prefix system- is reserved for the system classes (system-cluster-critical, system-node-critical)", name)
		}
		if pc.Value > HighestUserDefinablePriority {
			errs.Add("value", "%d: must be no greater than %d", pc.Value, HighestUserDefinablePriority)
		}
	}
	preemptionPolicy(&errs, "preemptionPolicy", pc.PreemptionPolicy)
	return errs
}

// PriorityClassUpdate: the value and preemption policy are fixed, as in
// Kubernetes (pods already hold the value).
func PriorityClassUpdate(old, new *v1.PriorityClass) Errs {
	var errs Errs
	if old.Value != new.Value {
		errs.Add("value", "may not be changed in an update")
	}
	if old.GetPreemptionPolicy() != new.GetPreemptionPolicy() {
		errs.Add("preemptionPolicy", "may not be changed in an update")
	}
	return errs
}

// preemptionPolicy checks a class's or a pod's policy: PreemptLowerPriority
// (what unset means) lets the scheduler delete lower-priority pods to make
// room, Never does not.
func preemptionPolicy(errs *Errs, path string, p *string) {
	if p == nil {
		return
	}
	switch *p {
	case "Never", "PreemptLowerPriority":
	default:
		errs.Add(path, "Unsupported value: %q: supported values: \"Never\", \"PreemptLowerPriority\"", *p)
	}
}
