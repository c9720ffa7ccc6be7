package labels

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	qualifiedNameRE = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	dns1123SubRE    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ValidateKey checks a label key: an optional DNS-subdomain prefix and "/",
// then a name of at most 63 characters.
func ValidateKey(k string) error {
	name := k
	if i := strings.LastIndex(k, "/"); i >= 0 {
		prefix := k[:i]
		name = k[i+1:]
		if len(prefix) == 0 || len(prefix) > 253 || !dns1123SubRE.MatchString(prefix) {
			return fmt.Errorf("prefix %q must be a DNS subdomain", prefix)
		}
	}
	if len(name) == 0 || len(name) > 63 || !qualifiedNameRE.MatchString(name) {
		return fmt.Errorf("name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric")
	}
	return nil
}

// ValidateValue checks a label value: empty, or at most 63 characters of
// alphanumerics, '-', '_' or '.', starting and ending alphanumeric.
func ValidateValue(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > 63 || !qualifiedNameRE.MatchString(v) {
		return fmt.Errorf("must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric")
	}
	return nil
}
