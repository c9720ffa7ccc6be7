package podsecurity

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// restrictedSpec passes every level: the starting point of the cases.
func restrictedSpec() *v1.PodSpec {
	return &v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{RunAsNonRoot: proto.Bool(true), SeccompProfile: &v1.SeccompProfile{Type: "RuntimeDefault"}},
		Containers: []*v1.Container{{Name: "app", Image: "nginx", SecurityContext: &v1.SecurityContext{
			AllowPrivilegeEscalation: proto.Bool(false), Capabilities: &v1.Capabilities{Drop: []string{"ALL"}}}}},
		Volumes: []*v1.Volume{{Name: "tmp", EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
}

func TestCheck(t *testing.T) {
	latest := func(l Level) Policy { return Policy{Level: l, Version: Latest} }
	for _, tc := range []struct {
		name   string
		policy Policy
		edit   func(s *v1.PodSpec)
		want   string // Message, "" when it passes
	}{
		{"restricted passes", latest(Restricted), func(*v1.PodSpec) {}, ""},
		{"projected and downwardAPI are restricted types", latest(Restricted), func(s *v1.PodSpec) {
			s.Volumes = append(s.Volumes,
				&v1.Volume{Name: "kube-api-access-x7k2p", Projected: &v1.ProjectedVolumeSource{Sources: []*v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}},
				&v1.Volume{Name: "info", DownwardApi: &v1.DownwardAPIVolumeSource{}})
		}, ""},
		{"privileged allows all", latest(Privileged), func(s *v1.PodSpec) { s.HostNetwork = true }, ""},
		{"hostNetwork", latest(Baseline), func(s *v1.PodSpec) { s.HostNetwork = true },
			`PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`},
		{"hostPath", latest(Baseline), func(s *v1.PodSpec) {
			s.Volumes = append(s.Volumes, &v1.Volume{Name: "root", HostPath: &v1.HostPathVolumeSource{Path: "/"}})
		}, `PodSecurity "baseline:latest": hostPath volumes (volume "root")`},
		{"hostPath at restricted is also a restricted type", latest(Restricted), func(s *v1.PodSpec) {
			s.Volumes = append(s.Volumes, &v1.Volume{Name: "a", HostPath: &v1.HostPathVolumeSource{Path: "/"}}, &v1.Volume{Name: "b", HostPath: &v1.HostPathVolumeSource{Path: "/x"}})
		}, `PodSecurity "restricted:latest": hostPath volumes (volumes "a", "b"), restricted volume types (volumes "a", "b" use restricted volume type "hostPath")`},
		{"privileged and capabilities", latest(Baseline), func(s *v1.PodSpec) {
			s.Containers[0].SecurityContext.Privileged = proto.Bool(true)
			s.Containers[0].SecurityContext.Capabilities.Add = []string{"SYS_ADMIN", "NET_ADMIN", "CHOWN"}
		}, `PodSecurity "baseline:latest": non-default capabilities (container "app" must not include "NET_ADMIN", "SYS_ADMIN" in securityContext.capabilities.add), privileged (container "app" must not set securityContext.privileged=true)`},
		{"hostPort", latest(Baseline), func(s *v1.PodSpec) {
			s.InitContainers = []*v1.Container{{Name: "init", Ports: []*v1.ContainerPort{{ContainerPort: 80, HostPort: 80}}}}
			s.Containers[0].Ports = []*v1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		}, `PodSecurity "baseline:latest": hostPort (containers "init", "app" use hostPorts 80, 8080)`},
		{"seccomp unconfined at baseline", latest(Baseline), func(s *v1.PodSpec) {
			s.SecurityContext.SeccompProfile.Type = "Unconfined"
		}, `PodSecurity "baseline:latest": seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`},
		{"procMount and sysctls", latest(Baseline), func(s *v1.PodSpec) {
			s.Containers[0].SecurityContext.ProcMount = "Unmasked"
			s.SecurityContext.Sysctls = []*v1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "kernel.msgmax", Value: "1"}}
		}, `PodSecurity "baseline:latest": procMount (container "app" must not set securityContext.procMount to "Unmasked"), forbidden sysctls (kernel.msgmax)`},
		{"sysctl newer than the version", Policy{Baseline, "v1.28"}, func(s *v1.PodSpec) {
			s.SecurityContext.Sysctls = []*v1.Sysctl{{Name: "net.ipv4.tcp_keepalive_time", Value: "60"}}
		}, `PodSecurity "baseline:v1.28": forbidden sysctls (net.ipv4.tcp_keepalive_time)`},
		{"nginx as the docs write it, at restricted", latest(Restricted), func(s *v1.PodSpec) {
			s.SecurityContext = nil
			s.Containers[0].SecurityContext = nil
		}, `PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
		{"container overrides", latest(Restricted), func(s *v1.PodSpec) {
			s.Containers[0].SecurityContext.RunAsNonRoot = proto.Bool(false)
			s.Containers[0].SecurityContext.RunAsUser = proto.Int64(0)
			s.Containers[0].SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: "Unconfined"}
			s.Containers[0].SecurityContext.Capabilities.Add = []string{"NET_BIND_SERVICE", "NET_RAW"}
		}, `PodSecurity "restricted:latest": unrestricted capabilities (container "app" must not include "NET_RAW" in securityContext.capabilities.add), runAsNonRoot != true (container "app" must not set securityContext.runAsNonRoot=false), runAsUser=0 (container "app" must not set runAsUser=0), seccompProfile (container "app" must not set securityContext.seccompProfile.type to "Unconfined")`},
		{"runAsUser check is from v1.23", Policy{Restricted, "v1.22"}, func(s *v1.PodSpec) {
			s.SecurityContext.RunAsUser = proto.Int64(0)
		}, ""},
		{"pod runAsNonRoot false", latest(Restricted), func(s *v1.PodSpec) {
			s.SecurityContext.RunAsNonRoot = proto.Bool(false)
		}, `PodSecurity "restricted:latest": runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false; pod or container "app" must set securityContext.runAsNonRoot=true)`},
		// hostUsers: false does not relax restricted: Kubernetes does so
		// only under the UserNamespacesPodSecurityStandards gate, alpha
		// and off by default through 1.3x.
		{"hostUsers false still needs runAsNonRoot", latest(Restricted), func(s *v1.PodSpec) {
			s.HostUsers = proto.Bool(false)
			s.SecurityContext.RunAsNonRoot = proto.Bool(false)
		}, `PodSecurity "restricted:latest": runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false; pod or container "app" must set securityContext.runAsNonRoot=true)`},
		{"hostUsers false passes restricted like any pod", latest(Restricted), func(s *v1.PodSpec) { s.HostUsers = proto.Bool(false) }, ""},
		{"container seccomp without pod's", latest(Restricted), func(s *v1.PodSpec) {
			s.SecurityContext.SeccompProfile = nil
			s.Containers[0].SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: "Localhost", LocalhostProfile: proto.String("p.json")}
		}, ""},
		{"secret and pvc volumes are restricted-safe", latest(Restricted), func(s *v1.PodSpec) {
			s.Volumes = append(s.Volumes, &v1.Volume{Name: "s", Secret: &v1.SecretVolumeSource{SecretName: "x"}},
				&v1.Volume{Name: "c", PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}})
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := restrictedSpec()
			tc.edit(s)
			got := ""
			if vs := Check(tc.policy, s); len(vs) > 0 {
				got = Message(tc.policy, vs)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestPolicies(t *testing.T) {
	d, err := ParseDefaults("enforce=baseline,warn=restricted:v1.30")
	if err != nil {
		t.Fatal(err)
	}
	got := FromLabels(map[string]string{LabelPrefix + "enforce": "restricted", LabelPrefix + "audit-version": "v1.29", LabelPrefix + "warn": "bogus"}, d)
	want := Policies{Enforce: {Restricted, Latest}, Warn: {Restricted, "v1.30"}, Audit: {Privileged, "v1.29"}}
	for m, p := range want {
		if got[m] != p {
			t.Errorf("%s: %v, want %v", m, got[m], p)
		}
	}
	for _, bad := range []string{"enforce", "deny=baseline", "enforce=strict", "warn=baseline:1.30"} {
		if _, err := ParseDefaults(bad); err == nil {
			t.Errorf("ParseDefaults(%q) accepted", bad)
		}
	}
	var errs apierrors.FieldErrors
	ValidateLabels(&errs, "metadata.labels", map[string]string{
		LabelPrefix + "enforce": "Baseline", LabelPrefix + "warn-version": "1.30", LabelPrefix + "exempt": "true",
		LabelPrefix + "audit": "restricted", "app": "web",
	})
	msg := errs.Err("Namespace", "x").Error()
	for _, want := range []string{
		`metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "Baseline": must be one of privileged, baseline, restricted`,
		`metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be latest or v1.<minor>`,
		`metadata.labels[pod-security.kubernetes.io/exempt]: not a Pod Security label`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s\nmissing %s", msg, want)
		}
	}
	if strings.Contains(msg, "audit]") || strings.Contains(msg, "app") {
		t.Errorf("valid labels refused: %s", msg)
	}
}

// FuzzCheck: any pod spec the decoder produces is evaluated without a
// panic; a more restrictive level never finds fewer violations, and
// restricted never passes what baseline refuses.
func FuzzCheck(f *testing.F) {
	seed, _ := protojson.Marshal(restrictedSpec())
	f.Add(seed)
	f.Add([]byte(`{"hostNetwork":true,"containers":[{"name":"a","securityContext":{"privileged":true,"capabilities":{"add":["ALL"]}}}]}`))
	f.Add([]byte(`{"securityContext":{"sysctls":[{"name":"kernel.msgmax"}],"runAsNonRoot":false},"initContainers":[{"name":"i","ports":[{"hostPort":1}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &v1.PodSpec{}
		if protojson.Unmarshal(b, s) != nil {
			return
		}
		base := Check(Policy{Baseline, Latest}, s)
		restr := Check(Policy{Restricted, Latest}, s)
		if len(Check(Policy{Privileged, Latest}, s)) != 0 {
			t.Fatal("privileged refused a pod")
		}
		if len(base) > 0 && len(restr) == 0 {
			t.Fatalf("restricted passed what baseline refuses: %v", base)
		}
		for _, v := range append(base, restr...) {
			if v.Reason == "" || strings.Contains(Message(Policy{Restricted, Latest}, []Violation{v}), "%!") {
				t.Fatalf("bad violation %+v", v)
			}
		}
	})
}
