// Package podsecurity holds the Pod Security Standards as Kubernetes'
// pod-security-admission evaluates them: the levels privileged, baseline
// and restricted, the namespace labels that choose them per mode (enforce,
// warn, audit) and the checks a pod spec must pass at each level, with
// Kubernetes' reasons and details ("host namespaces (hostNetwork=true)").
//
// It is pure: the apiserver's admission (apiserver/podsecurity.go) reads
// the namespace and acts on the result.
package podsecurity

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
)

// Level is a Pod Security Standard.
type Level string

const (
	Privileged Level = "privileged"
	Baseline   Level = "baseline"
	Restricted Level = "restricted"
)

// rank orders the levels from least to most restrictive.
func (l Level) rank() int {
	switch l {
	case Baseline:
		return 1
	case Restricted:
		return 2
	}
	return 0
}

// Mode is what a violation does: enforce refuses the pod, warn returns a
// warning to the client, audit annotates the audit event.
type Mode string

const (
	Enforce Mode = "enforce"
	Warn    Mode = "warn"
	Audit   Mode = "audit"
)

// Modes in the order they are evaluated.
var Modes = []Mode{Enforce, Audit, Warn}

// LabelPrefix is the prefix of the namespace labels: <prefix><mode> holds
// the level, <prefix><mode>-version the version.
const LabelPrefix = "pod-security.kubernetes.io/"

// Latest is the version that means "the checks of this release".
const Latest = "latest"

// Policy is a level at a version, printed "baseline:latest".
type Policy struct {
	Level   Level
	Version string
}

func (p Policy) String() string { return string(p.Level) + ":" + p.Version }

// Policies is a namespace's policy per mode.
type Policies map[Mode]Policy

var versionRE = regexp.MustCompile(`^v1\.(0|[1-9][0-9]*)$`)

// ParseLevel reads a level label's value.
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case Privileged, Baseline, Restricted:
		return l, nil
	}
	return "", fmt.Errorf("Invalid value: %q: must be one of privileged, baseline, restricted", s)
}

// ParseVersion reads a version label's value: latest or v1.<minor>.
func ParseVersion(s string) (string, error) {
	if s == Latest || versionRE.MatchString(s) {
		return s, nil
	}
	return "", fmt.Errorf("Invalid value: %q: must be latest or v1.<minor> (v1.30)", s)
}

// ValidateLabels checks the pod-security labels of a namespace: a bad
// level or version, or a label of an unknown mode, is an error naming the
// label (field is the path of the labels, "metadata.labels").
func ValidateLabels(errs *apierrors.FieldErrors, field string, labels map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		mode, ok := strings.CutPrefix(k, LabelPrefix)
		if !ok {
			continue
		}
		path := fmt.Sprintf("%s[%s]", field, k)
		m, isVersion := strings.CutSuffix(mode, "-version")
		switch Mode(m) {
		case Enforce, Warn, Audit:
		default:
			errs.Add(path, "not a Pod Security label: want %senforce, %swarn or %saudit and their -version (exemptions are the apiserver's --pod-security-exempt-namespaces)", LabelPrefix, LabelPrefix, LabelPrefix)
			continue
		}
		var err error
		if isVersion {
			_, err = ParseVersion(v)
		} else {
			_, err = ParseLevel(v)
		}
		if err != nil {
			errs.Add(path, "%v", err)
		}
	}
}

// FromLabels is a namespace's policies: each mode's label where set and
// valid, else the default's (a version label alone keeps the default
// level). Labels are validated when namespaces are stored; a bad one read
// here falls back to the default.
func FromLabels(labels map[string]string, defaults Policies) Policies {
	out := Policies{}
	for _, m := range Modes {
		p := defaults[m]
		if p.Level == "" {
			p.Level = Privileged
		}
		if p.Version == "" {
			p.Version = Latest
		}
		if l, err := ParseLevel(labels[LabelPrefix+string(m)]); err == nil {
			p.Level = l
		}
		if v, err := ParseVersion(labels[LabelPrefix+string(m)+"-version"]); err == nil {
			p.Version = v
		}
		out[m] = p
	}
	return out
}

// DefaultPolicies is the cluster's policy for namespaces without
// pod-security labels unless the apiserver is told otherwise
// (--pod-security): pods that break the baseline standard (hostPath,
// host namespaces, privileged, added capabilities, hostPorts...) are
// refused, workloads whose template breaks it are stored with a warning
// (their pods will be refused), and the audit log records what the
// restricted standard would refuse. Kubernetes' built-in default is
// privileged for every mode; this is its documented recommendation for a
// cluster shared by users, so that `edit` in a namespace is not root on
// the nodes. The cluster's own components run in the exempt kube-system.
const DefaultPolicies = "enforce=baseline,warn=baseline,audit=restricted"

// ParseDefaults reads the apiserver's --pod-security flag:
// "enforce=baseline,warn=restricted,audit=restricted:v1.30" (a mode not
// named stays privileged).
func ParseDefaults(s string) (Policies, error) {
	out := Policies{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		m := Mode(k)
		if !ok || (m != Enforce && m != Warn && m != Audit) {
			return nil, fmt.Errorf("%q: want enforce|warn|audit=LEVEL[:VERSION]", part)
		}
		lv, ver, hasVer := strings.Cut(v, ":")
		l, err := ParseLevel(lv)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		p := Policy{Level: l, Version: Latest}
		if hasVer {
			if p.Version, err = ParseVersion(ver); err != nil {
				return nil, fmt.Errorf("%s: %v", k, err)
			}
		}
		out[m] = p
	}
	return out, nil
}
