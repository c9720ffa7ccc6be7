package podsecurity

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Violation is one failed check: Kubernetes' reason ("host namespaces")
// and detail ("hostNetwork=true").
type Violation struct {
	Reason string
	Detail string
}

func (v Violation) String() string {
	if v.Detail == "" {
		return v.Reason
	}
	return v.Reason + " (" + v.Detail + ")"
}

// Message is the text of a pod's violations of p, as Kubernetes words it
// after "violates" or "would violate":
// `PodSecurity "baseline:latest": host namespaces (hostNetwork=true), ...`.
func Message(p Policy, vs []Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return fmt.Sprintf("PodSecurity %q: %s", p.String(), strings.Join(parts, ", "))
}

// check is one rule of the standards; checks run in the order of their
// ids, as Kubernetes' do, so messages list reasons in its order.
type check struct {
	id    string
	level Level
	// overrides names the baseline check this restricted one replaces.
	overrides string
	// since is the first minor version (v1.<since>) the check applies to.
	since int
	run   func(s *v1.PodSpec, minor int) *Violation
}

var checks = []check{
	{id: "allowPrivilegeEscalation", level: Restricted, since: 8, run: allowPrivilegeEscalation},
	{id: "appArmorProfile", level: Baseline, run: appArmorProfile},
	{id: "capabilities_baseline", level: Baseline, run: capabilitiesBaseline},
	{id: "capabilities_restricted", level: Restricted, overrides: "capabilities_baseline", since: 22, run: capabilitiesRestricted},
	{id: "hostNamespaces", level: Baseline, run: hostNamespaces},
	{id: "hostPathVolumes", level: Baseline, run: hostPathVolumes},
	{id: "hostPorts", level: Baseline, run: hostPorts},
	{id: "privileged", level: Baseline, run: privileged},
	{id: "procMount", level: Baseline, run: procMount},
	{id: "restrictedVolumes", level: Restricted, run: restrictedVolumes},
	{id: "runAsNonRoot", level: Restricted, run: runAsNonRoot},
	{id: "runAsUser", level: Restricted, since: 23, run: runAsUser},
	{id: "seLinuxOptions", level: Baseline, run: seLinuxOptions},
	{id: "seccompProfile_baseline", level: Baseline, since: 19, run: seccompBaseline},
	{id: "seccompProfile_restricted", level: Restricted, overrides: "seccompProfile_baseline", since: 19, run: seccompRestricted},
	{id: "sysctls", level: Baseline, run: sysctls},
}

// minorOf is a version's minor number; latest is above every release.
func minorOf(version string) int {
	if m, ok := strings.CutPrefix(version, "v1."); ok {
		if n, err := strconv.Atoi(m); err == nil {
			return n
		}
	}
	return math.MaxInt
}

// Check evaluates a pod spec against p: nil when it passes.
func Check(p Policy, s *v1.PodSpec) []Violation {
	if p.Level.rank() == 0 || s == nil {
		return nil
	}
	minor := minorOf(p.Version)
	overridden := map[string]bool{}
	if p.Level == Restricted {
		for _, c := range checks {
			if c.overrides != "" && minor >= c.since {
				overridden[c.overrides] = true
			}
		}
	}
	var out []Violation
	for _, c := range checks {
		if c.level.rank() > p.Level.rank() || minor < c.since || overridden[c.id] {
			continue
		}
		if v := c.run(s, minor); v != nil {
			out = append(out, *v)
		}
	}
	return out
}

// containers are a pod's init, app and ephemeral containers, in
// Kubernetes' order.
func containers(s *v1.PodSpec) []*v1.Container {
	out := append(slices.Clone(s.InitContainers), s.Containers...)
	for _, e := range s.EphemeralContainers {
		out = append(out, e.AsContainer())
	}
	return out
}

// quoted is `"a", "b"`.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// pluralize picks singular or plural by the count.
func pluralize(singular, plural string, n int) string {
	if n == 1 {
		return singular
	}
	return plural
}

// containersPhrase is `container "a"` or `containers "a", "b"`.
func containersPhrase(names []string) string {
	return pluralize("container", "containers", len(names)) + " " + quoted(names)
}

func violation(reason, detail string) *Violation { return &Violation{Reason: reason, Detail: detail} }

func allowPrivilegeEscalation(s *v1.PodSpec, _ int) *Violation {
	var bad []string
	for _, c := range containers(s) {
		sc := c.GetSecurityContext()
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad = append(bad, c.Name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return violation("allowPrivilegeEscalation != false",
		fmt.Sprintf("%s must set securityContext.allowPrivilegeEscalation=false", containersPhrase(bad)))
}

func appArmorProfile(s *v1.PodSpec, _ int) *Violation {
	var details []string
	if t := s.GetSecurityContext().GetAppArmorProfile().GetType(); t != "" && t != "RuntimeDefault" && t != "Localhost" {
		details = append(details, fmt.Sprintf("pod must not set securityContext.appArmorProfile.type to %q", t))
	}
	for _, c := range containers(s) {
		if t := c.GetSecurityContext().GetAppArmorProfile().GetType(); t != "" && t != "RuntimeDefault" && t != "Localhost" {
			details = append(details, fmt.Sprintf("container %q must not set securityContext.appArmorProfile.type to %q", c.Name, t))
		}
	}
	if len(details) == 0 {
		return nil
	}
	return violation("forbidden AppArmor profile", strings.Join(details, "; "))
}

// baselineCapabilities may be added at baseline (the runtimes' defaults).
var baselineCapabilities = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

func capabilitiesBaseline(s *v1.PodSpec, _ int) *Violation {
	var names, caps []string
	for _, c := range containers(s) {
		bad := false
		for _, add := range c.GetSecurityContext().GetCapabilities().GetAdd() {
			if !slices.Contains(baselineCapabilities, add) {
				bad = true
				if !slices.Contains(caps, add) {
					caps = append(caps, add)
				}
			}
		}
		if bad {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(caps)
	return violation("non-default capabilities",
		fmt.Sprintf("%s must not include %s in securityContext.capabilities.add", containersPhrase(names), quoted(caps)))
}

func capabilitiesRestricted(s *v1.PodSpec, _ int) *Violation {
	var noDrop, badAdd, caps []string
	for _, c := range containers(s) {
		cp := c.GetSecurityContext().GetCapabilities()
		if !slices.Contains(cp.GetDrop(), "ALL") {
			noDrop = append(noDrop, c.Name)
		}
		bad := false
		for _, add := range cp.GetAdd() {
			if add != "NET_BIND_SERVICE" {
				bad = true
				if !slices.Contains(caps, add) {
					caps = append(caps, add)
				}
			}
		}
		if bad {
			badAdd = append(badAdd, c.Name)
		}
	}
	var details []string
	if len(noDrop) > 0 {
		details = append(details, fmt.Sprintf(`%s must set securityContext.capabilities.drop=["ALL"]`, containersPhrase(noDrop)))
	}
	if len(badAdd) > 0 {
		slices.Sort(caps)
		details = append(details, fmt.Sprintf("%s must not include %s in securityContext.capabilities.add", containersPhrase(badAdd), quoted(caps)))
	}
	if len(details) == 0 {
		return nil
	}
	return violation("unrestricted capabilities", strings.Join(details, "; "))
}

func hostNamespaces(s *v1.PodSpec, _ int) *Violation {
	if !s.HostNetwork {
		return nil
	}
	return violation("host namespaces", "hostNetwork=true")
}

func hostPathVolumes(s *v1.PodSpec, _ int) *Violation {
	var names []string
	for _, v := range s.Volumes {
		if v.HostPath != nil {
			names = append(names, v.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return violation("hostPath volumes", pluralize("volume", "volumes", len(names))+" "+quoted(names))
}

func hostPorts(s *v1.PodSpec, _ int) *Violation {
	var names, ports []string
	for _, c := range containers(s) {
		bad := false
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				bad = true
				ports = append(ports, strconv.Itoa(int(p.HostPort)))
			}
		}
		if bad {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return violation("hostPort", fmt.Sprintf("%s %s %s %s", containersPhrase(names), pluralize("uses", "use", len(names)),
		pluralize("hostPort", "hostPorts", len(ports)), strings.Join(ports, ", ")))
}

func privileged(s *v1.PodSpec, _ int) *Violation {
	var names []string
	for _, c := range containers(s) {
		if c.GetSecurityContext().GetPrivileged() {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return violation("privileged", containersPhrase(names)+" must not set securityContext.privileged=true")
}

func procMount(s *v1.PodSpec, _ int) *Violation {
	var names []string
	var types []string
	for _, c := range containers(s) {
		if t := c.GetSecurityContext().GetProcMount(); t != "" && t != "Default" {
			names = append(names, c.Name)
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	return violation("procMount", fmt.Sprintf("%s must not set securityContext.procMount to %s", containersPhrase(names), quoted(types)))
}

// volumeType is the name of the one source a volume sets.
func volumeType(v *v1.Volume) string {
	switch {
	case v.EmptyDir != nil:
		return "emptyDir"
	case v.HostPath != nil:
		return "hostPath"
	case v.ConfigMap != nil:
		return "configMap"
	case v.Secret != nil:
		return "secret"
	case v.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case v.DownwardApi != nil:
		return "downwardAPI"
	case v.Projected != nil:
		return "projected"
	case v.Image != nil:
		return "image"
	}
	return "unknown"
}

// restrictedVolumeTypes may be used at restricted.
var restrictedVolumeTypes = []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret"}

func restrictedVolumes(s *v1.PodSpec, _ int) *Violation {
	var names, types []string
	for _, v := range s.Volumes {
		if t := volumeType(v); !slices.Contains(restrictedVolumeTypes, t) {
			names = append(names, v.Name)
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	return violation("restricted volume types", fmt.Sprintf("%s %s %s %s", pluralize("volume", "volumes", len(names)), quoted(names),
		pluralize("uses", "use", len(names)), pluralize("restricted volume type", "restricted volume types", len(types))+" "+quoted(types)))
}

func runAsNonRoot(s *v1.PodSpec, _ int) *Violation {
	psc := s.GetSecurityContext()
	var details []string
	podSet := psc != nil && psc.RunAsNonRoot != nil
	if podSet && !*psc.RunAsNonRoot {
		details = append(details, "pod must not set securityContext.runAsNonRoot=false")
	}
	var explicitFalse, unset []string
	for _, c := range containers(s) {
		sc := c.GetSecurityContext()
		switch {
		case sc != nil && sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot:
			explicitFalse = append(explicitFalse, c.Name)
		case (sc == nil || sc.RunAsNonRoot == nil) && !(podSet && *psc.RunAsNonRoot):
			unset = append(unset, c.Name)
		}
	}
	if len(explicitFalse) > 0 {
		details = append(details, containersPhrase(explicitFalse)+" must not set securityContext.runAsNonRoot=false")
	}
	if len(unset) > 0 {
		details = append(details, "pod or "+containersPhrase(unset)+" must set securityContext.runAsNonRoot=true")
	}
	if len(details) == 0 {
		return nil
	}
	return violation("runAsNonRoot != true", strings.Join(details, "; "))
}

func runAsUser(s *v1.PodSpec, _ int) *Violation {
	var details []string
	if psc := s.GetSecurityContext(); psc != nil && psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		details = append(details, "pod must not set runAsUser=0")
	}
	var names []string
	for _, c := range containers(s) {
		if sc := c.GetSecurityContext(); sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			names = append(names, c.Name)
		}
	}
	if len(names) > 0 {
		details = append(details, containersPhrase(names)+" must not set runAsUser=0")
	}
	if len(details) == 0 {
		return nil
	}
	return violation("runAsUser=0", strings.Join(details, "; "))
}

// seLinuxTypes may be set at baseline.
var seLinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

func seLinuxOptions(s *v1.PodSpec, _ int) *Violation {
	var details []string
	bad := func(who string, o *v1.SELinuxOptions) {
		if o == nil {
			return
		}
		var f []string
		if !slices.Contains(seLinuxTypes, o.Type) {
			f = append(f, fmt.Sprintf("type %q", o.Type))
		}
		if o.User != "" {
			f = append(f, fmt.Sprintf("user %q", o.User))
		}
		if o.Role != "" {
			f = append(f, fmt.Sprintf("role %q", o.Role))
		}
		if len(f) > 0 {
			details = append(details, fmt.Sprintf("%s set forbidden securityContext.seLinuxOptions: %s", who, strings.Join(f, ", ")))
		}
	}
	bad("pod", s.GetSecurityContext().GetSeLinuxOptions())
	for _, c := range containers(s) {
		bad(fmt.Sprintf("container %q", c.Name), c.GetSecurityContext().GetSeLinuxOptions())
	}
	if len(details) == 0 {
		return nil
	}
	return violation("seLinuxOptions", strings.Join(details, "; "))
}

func seccompBaseline(s *v1.PodSpec, _ int) *Violation {
	var details []string
	if s.GetSecurityContext().GetSeccompProfile().GetType() == "Unconfined" {
		details = append(details, `pod must not set securityContext.seccompProfile.type to "Unconfined"`)
	}
	var names []string
	for _, c := range containers(s) {
		if c.GetSecurityContext().GetSeccompProfile().GetType() == "Unconfined" {
			names = append(names, c.Name)
		}
	}
	if len(names) > 0 {
		details = append(details, containersPhrase(names)+` must not set securityContext.seccompProfile.type to "Unconfined"`)
	}
	if len(details) == 0 {
		return nil
	}
	return violation("seccompProfile", strings.Join(details, "; "))
}

func seccompRestricted(s *v1.PodSpec, _ int) *Violation {
	confined := func(t string) bool { return t == "RuntimeDefault" || t == "Localhost" }
	var details []string
	podType := s.GetSecurityContext().GetSeccompProfile().GetType()
	if podType != "" && !confined(podType) {
		details = append(details, fmt.Sprintf("pod must not set securityContext.seccompProfile.type to %q", podType))
	}
	var bad, unset []string
	for _, c := range containers(s) {
		t := c.GetSecurityContext().GetSeccompProfile().GetType()
		switch {
		case t != "" && !confined(t):
			bad = append(bad, c.Name)
		case t == "" && !confined(podType):
			unset = append(unset, c.Name)
		}
	}
	if len(bad) > 0 {
		details = append(details, containersPhrase(bad)+` must not set securityContext.seccompProfile.type to "Unconfined"`)
	}
	if len(unset) > 0 && podType == "" {
		details = append(details, "pod or "+containersPhrase(unset)+` must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`)
	}
	if len(details) == 0 {
		return nil
	}
	return violation("seccompProfile", strings.Join(details, "; "))
}

// safeSysctls are the sysctls baseline allows, by the version that
// allowed them.
var safeSysctls = map[string]int{
	"kernel.shm_rmid_forced":              0,
	"net.ipv4.ip_local_port_range":        0,
	"net.ipv4.tcp_syncookies":             0,
	"net.ipv4.ping_group_range":           0,
	"net.ipv4.ip_unprivileged_port_start": 0,
	"net.ipv4.ip_local_reserved_ports":    27,
	"net.ipv4.tcp_keepalive_time":         29,
	"net.ipv4.tcp_fin_timeout":            29,
	"net.ipv4.tcp_keepalive_intvl":        29,
	"net.ipv4.tcp_keepalive_probes":       29,
	"net.ipv4.tcp_rmem":                   32,
	"net.ipv4.tcp_wmem":                   32,
}

func sysctls(s *v1.PodSpec, minor int) *Violation {
	var names []string
	for _, sc := range s.GetSecurityContext().GetSysctls() {
		if since, ok := safeSysctls[sc.Name]; !ok || minor < since {
			if !slices.Contains(names, sc.Name) {
				names = append(names, sc.Name)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	return violation("forbidden sysctls", strings.Join(names, ", "))
}
