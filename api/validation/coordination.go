// The coordination.k8s.io group: Lease.

package validation

import (
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Lease validates a lease.
func Lease(l *v1.Lease) Errs {
	var errs Errs
	ObjectMeta(&errs, l.Metadata, true, DNSSubdomain)
	if l.Spec.GetLeaseDurationSeconds() < 0 {
		errs.Add("spec.leaseDurationSeconds", "must be >= 0")
	}
	return errs
}
