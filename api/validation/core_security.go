package validation

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Capabilities are the Linux capability names a container may add or drop
// (without the CAP_ prefix, as Kubernetes writes them), plus "ALL".
var Capabilities = map[string]bool{
	"ALL": true, "AUDIT_CONTROL": true, "AUDIT_READ": true, "AUDIT_WRITE": true,
	"BLOCK_SUSPEND": true, "BPF": true, "CHECKPOINT_RESTORE": true, "CHOWN": true,
	"DAC_OVERRIDE": true, "DAC_READ_SEARCH": true, "FOWNER": true, "FSETID": true,
	"IPC_LOCK": true, "IPC_OWNER": true, "KILL": true, "LEASE": true,
	"LINUX_IMMUTABLE": true, "MAC_ADMIN": true, "MAC_OVERRIDE": true, "MKNOD": true,
	"NET_ADMIN": true, "NET_BIND_SERVICE": true, "NET_BROADCAST": true, "NET_RAW": true,
	"PERFMON": true, "SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true,
	"SYSLOG": true, "SYS_ADMIN": true, "SYS_BOOT": true, "SYS_CHROOT": true,
	"SYS_MODULE": true, "SYS_NICE": true, "SYS_PACCT": true, "SYS_PTRACE": true,
	"SYS_RAWIO": true, "SYS_RESOURCE": true, "SYS_TIME": true, "SYS_TTY_CONFIG": true,
	"WAKE_ALARM": true,
}

// SafeSysctls are the namespaced sysctls Kubernetes' kubelet allows
// without --allowed-unsafe-sysctls; Tugboat serves only these.
var SafeSysctls = map[string]bool{
	"kernel.shm_rmid_forced":              true,
	"net.ipv4.ip_local_port_range":        true,
	"net.ipv4.tcp_syncookies":             true,
	"net.ipv4.ping_group_range":           true,
	"net.ipv4.ip_unprivileged_port_start": true,
	"net.ipv4.ip_local_reserved_ports":    true,
	"net.ipv4.tcp_keepalive_time":         true,
	"net.ipv4.tcp_fin_timeout":            true,
	"net.ipv4.tcp_keepalive_intvl":        true,
	"net.ipv4.tcp_keepalive_probes":       true,
}

// maxID is the largest uid or gid Kubernetes accepts.
const maxID = 2147483647

func id(errs *Errs, path string, v *int64) {
	if v != nil && (*v < 0 || *v > maxID) {
		errs.Add(path, "must be between 0 and %d, inclusive", maxID)
	}
}

// podSecurityContext validates spec.securityContext.
func podSecurityContext(errs *Errs, p string, s *v1.PodSpec) {
	sc := s.SecurityContext
	if sc == nil {
		return
	}
	id(errs, p+".runAsUser", sc.RunAsUser)
	id(errs, p+".runAsGroup", sc.RunAsGroup)
	id(errs, p+".fsGroup", sc.FsGroup)
	for i, g := range sc.SupplementalGroups {
		id(errs, fmt.Sprintf("%s.supplementalGroups[%d]", p, i), &g)
	}
	if sc.FsGroupChangePolicy != "" {
		OneOf(errs, p+".fsGroupChangePolicy", sc.FsGroupChangePolicy, "Always", "OnRootMismatch")
	}
	seen := map[string]bool{}
	for i, c := range sc.Sysctls {
		sp := fmt.Sprintf("%s.sysctls[%d]", p, i)
		switch {
		case c.Name == "":
			errs.Add(sp+".name", "required")
		case !SafeSysctls[strings.ReplaceAll(c.Name, "/", ".")]:
			errs.Add(sp+".name", "%q is not supported: only the safe sysctls (%s)", c.Name, strings.Join(slices.Sorted(maps.Keys(SafeSysctls)), ", "))
		case seen[c.Name]:
			errs.Add(sp+".name", "%q is duplicated", c.Name)
		case s.HostNetwork && strings.HasPrefix(c.Name, "net."):
			errs.Add(sp+".name", "%q not allowed with host net enabled", c.Name)
		}
		seen[c.Name] = true
	}
	seccompProfile(errs, p+".seccompProfile", sc.SeccompProfile)
	if sc.SeLinuxOptions != nil {
		errs.Add(p+".seLinuxOptions", "not supported: Tugboat's nodes run without SELinux")
	}
	if sc.AppArmorProfile != nil {
		errs.Add(p+".appArmorProfile", "not supported: Tugboat's nodes run without AppArmor")
	}
}

// containerSecurityContext validates a container's securityContext.
func containerSecurityContext(errs *Errs, p string, sc *v1.SecurityContext) {
	if sc == nil {
		return
	}
	id(errs, p+".runAsUser", sc.RunAsUser)
	id(errs, p+".runAsGroup", sc.RunAsGroup)
	if sc.GetPrivileged() && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		errs.Add(p, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true")
	}
	if c := sc.Capabilities; c != nil {
		for field, names := range map[string][]string{"add": c.Add, "drop": c.Drop} {
			for i, n := range names {
				if !Capabilities[strings.TrimPrefix(strings.ToUpper(n), "CAP_")] {
					errs.Add(fmt.Sprintf("%s.capabilities.%s[%d]", p, field, i), "%q is not a Linux capability", n)
				}
			}
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			for _, n := range c.Add {
				if n := strings.TrimPrefix(strings.ToUpper(n), "CAP_"); n == "SYS_ADMIN" || n == "ALL" {
					errs.Add(p, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN")
					break
				}
			}
		}
	}
	if sc.ProcMount != "" && sc.ProcMount != "Default" {
		errs.Add(p+".procMount", "%q is not supported: only Default (Unmasked needs user namespaces)", sc.ProcMount)
	}
	seccompProfile(errs, p+".seccompProfile", sc.SeccompProfile)
	if sc.SeLinuxOptions != nil {
		errs.Add(p+".seLinuxOptions", "not supported: Tugboat's nodes run without SELinux")
	}
	if sc.AppArmorProfile != nil {
		errs.Add(p+".appArmorProfile", "not supported: Tugboat's nodes run without AppArmor")
	}
}

func seccompProfile(errs *Errs, p string, sp *v1.SeccompProfile) {
	if sp == nil {
		return
	}
	switch sp.Type {
	case "RuntimeDefault", "Unconfined":
		if sp.LocalhostProfile != nil {
			errs.Add(p+".localhostProfile", "can only be set for type Localhost")
		}
	case "Localhost":
		lp := sp.GetLocalhostProfile()
		switch {
		case lp == "":
			errs.Add(p+".localhostProfile", "required when type is Localhost")
		case path.IsAbs(lp) || strings.Contains(lp, ".."):
			errs.Add(p+".localhostProfile", "%q must be a relative path without '..' (under the kubelet's seccomp directory)", lp)
		}
	case "":
		errs.Add(p+".type", "required")
	default:
		errs.Add(p+".type", "Unsupported value: %q: supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"", sp.Type)
	}
}
