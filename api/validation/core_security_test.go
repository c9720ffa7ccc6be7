package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestSecurityContextValidation(t *testing.T) {
	withPod := func(sc *v1.PodSecurityContext) func() v1.Object {
		return func() v1.Object { p := pod(); p.Spec.SecurityContext = sc; return p }
	}
	withContainer := func(sc *v1.SecurityContext) func() v1.Object {
		return func() v1.Object { p := pod(); p.Spec.Containers[0].SecurityContext = sc; return p }
	}
	const c = "spec.containers[0].securityContext"
	runValidation(t, []validationCase{
		{"restricted-shaped pod", withPod(&v1.PodSecurityContext{
			RunAsUser: proto.Int64(1000), RunAsGroup: proto.Int64(3000), FsGroup: proto.Int64(2000), RunAsNonRoot: proto.Bool(true),
			SupplementalGroups: []int64{4000}, SeccompProfile: &v1.SeccompProfile{Type: "RuntimeDefault"},
			Sysctls: []*v1.Sysctl{{Name: "net.ipv4.ping_group_range", Value: "0 2147483647"}}, FsGroupChangePolicy: "OnRootMismatch",
		}), nil},
		{"restricted-shaped container", withContainer(&v1.SecurityContext{
			AllowPrivilegeEscalation: proto.Bool(false), ReadOnlyRootFilesystem: proto.Bool(true), RunAsNonRoot: proto.Bool(true),
			Capabilities: &v1.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}}, ProcMount: "Default",
			SeccompProfile: &v1.SeccompProfile{Type: "Localhost", LocalhostProfile: proto.String("profiles/audit.json")},
		}), nil},
		{"negative uid", withPod(&v1.PodSecurityContext{RunAsUser: proto.Int64(-1)}), []string{"spec.securityContext.runAsUser: must be between 0 and 2147483647"}},
		{"big gid", withContainer(&v1.SecurityContext{RunAsGroup: proto.Int64(1 << 32)}), []string{c + ".runAsGroup: must be between"}},
		{"negative supplemental group", withPod(&v1.PodSecurityContext{SupplementalGroups: []int64{1, -5}}), []string{"spec.securityContext.supplementalGroups[1]"}},
		{"negative fsGroup", withPod(&v1.PodSecurityContext{FsGroup: proto.Int64(-2)}), []string{"spec.securityContext.fsGroup"}},
		{"fsGroupChangePolicy", withPod(&v1.PodSecurityContext{FsGroupChangePolicy: "Never"}), []string{"spec.securityContext.fsGroupChangePolicy"}},
		{"unsafe sysctl", withPod(&v1.PodSecurityContext{Sysctls: []*v1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}),
			[]string{`spec.securityContext.sysctls[0].name: "kernel.msgmax" is not supported: only the safe sysctls`}},
		{"duplicate sysctl", withPod(&v1.PodSecurityContext{Sysctls: []*v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "kernel.shm_rmid_forced", Value: "0"}}}),
			[]string{"spec.securityContext.sysctls[1].name", "duplicated"}},
		{"net sysctl with host network", func() v1.Object {
			p := withPod(&v1.PodSecurityContext{Sysctls: []*v1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}}})().(*v1.Pod)
			p.Spec.HostNetwork = true
			return p
		}, []string{"spec.securityContext.sysctls[0].name", "host net"}},
		{"seccomp type", withPod(&v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: "Default"}}), []string{"spec.securityContext.seccompProfile.type", "Unsupported value"}},
		{"seccomp localhost without profile", withContainer(&v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: "Localhost"}}),
			[]string{c + ".seccompProfile.localhostProfile: required"}},
		{"seccomp localhost escapes", withContainer(&v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: "Localhost", LocalhostProfile: proto.String("../x.json")}}),
			[]string{c + ".seccompProfile.localhostProfile", "relative path"}},
		{"seccomp profile for RuntimeDefault", withContainer(&v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: "RuntimeDefault", LocalhostProfile: proto.String("x")}}),
			[]string{c + ".seccompProfile.localhostProfile: can only be set"}},
		{"privileged without escalation", withContainer(&v1.SecurityContext{Privileged: proto.Bool(true), AllowPrivilegeEscalation: proto.Bool(false)}),
			[]string{c + ": cannot set `allowPrivilegeEscalation` to false and `privileged` to true"}},
		{"SYS_ADMIN without escalation", withContainer(&v1.SecurityContext{AllowPrivilegeEscalation: proto.Bool(false), Capabilities: &v1.Capabilities{Add: []string{"SYS_ADMIN"}}}),
			[]string{"CAP_SYS_ADMIN"}},
		{"unknown capability", withContainer(&v1.SecurityContext{Capabilities: &v1.Capabilities{Drop: []string{"NET_FOO"}}}),
			[]string{c + `.capabilities.drop[0]: "NET_FOO" is not a Linux capability`}},
		{"procMount Unmasked", withContainer(&v1.SecurityContext{ProcMount: "Unmasked"}), []string{c + `.procMount: "Unmasked" is not supported`}},
		{"seLinuxOptions", withPod(&v1.PodSecurityContext{SeLinuxOptions: &v1.SELinuxOptions{Level: "s0:c123,c456"}}), []string{"spec.securityContext.seLinuxOptions: not supported"}},
		{"appArmorProfile", withContainer(&v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: "RuntimeDefault"}}), []string{c + ".appArmorProfile: not supported"}},
	})
}
