package validation

import v1 "github.com/tugboat/tugboat/api/v1"

// ServiceAccount validates a service account (its name is a DNS subdomain,
// as it becomes part of a user name).
func ServiceAccount(sa *v1.ServiceAccount) Errs {
	var errs Errs
	ObjectMeta(&errs, sa.Metadata, true, DNSSubdomain)
	return errs
}
