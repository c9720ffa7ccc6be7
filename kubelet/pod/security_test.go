package pod

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestRunAsNonRoot: a container that must not run as root waits with
// CreateContainerConfigError and Kubernetes' message while its user would
// be root (the image's, or runAsUser 0), and starts with a non-root uid.
func TestRunAsNonRoot(t *testing.T) {
	cases := []struct {
		name      string
		imageUser string
		pod       *v1.PodSecurityContext
		ctr       *v1.SecurityContext
		want      string // waiting message; "" means it starts
	}{
		{"root image", "", &v1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, nil,
			`container has runAsNonRoot and image will run as root (pod: "sec", container: app)`},
		{"uid 0 image", "0:0", nil, &v1.SecurityContext{RunAsNonRoot: proto.Bool(true)},
			"image will run as root"},
		{"named user", "nginx", &v1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, nil,
			"container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root"},
		{"runAsUser 0", "1000", &v1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, &v1.SecurityContext{RunAsUser: proto.Int64(0)},
			`container's runAsUser breaks non-root policy (pod: "sec", container: app)`},
		{"non-root image", "1000", &v1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, nil, ""},
		{"runAsUser over a root image", "", &v1.PodSecurityContext{RunAsNonRoot: proto.Bool(true), RunAsUser: proto.Int64(1000)}, nil, ""},
		{"container turns it off", "", &v1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, &v1.SecurityContext{RunAsNonRoot: proto.Bool(false)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.rt.imageUsers = map[string]string{testImage: c.imageUser}
			pod := newPod("sec", "app")
			pod.Spec.SecurityContext = c.pod
			pod.Spec.Containers[0].SecurityContext = c.ctr
			w := e.worker(pod)
			e.sync(w)
			wt := containerState(w.status, "app").GetState().GetWaiting()
			if c.want == "" {
				if len(e.rt.running()) != 1 {
					t.Fatalf("not running: %v", containerState(w.status, "app"))
				}
				return
			}
			if wt.GetReason() != ReasonCreateContainerConfigError || !strings.Contains(wt.GetMessage(), c.want) {
				t.Fatalf("waiting %v, want CreateContainerConfigError %q", wt, c.want)
			}
			if len(e.rt.running()) != 0 {
				t.Fatal("the container runs")
			}
		})
	}
}

// TestSecurityConfigMerge: the container's fields win over the pod's, the
// pod's groups and fsGroup are the process's supplementary groups, a
// Localhost profile is under RootDir/seccomp, sysctls and privileged
// reach the sandbox.
func TestSecurityConfigMerge(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("sec", "app")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: proto.Int64(1000), RunAsGroup: proto.Int64(2000), SupplementalGroups: []int64{5}, FsGroup: proto.Int64(7),
		SeccompProfile: &v1.SeccompProfile{Type: "RuntimeDefault"},
		Sysctls:        []*v1.Sysctl{{Name: "net/ipv4/tcp_syncookies", Value: "1"}},
	}
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{
		RunAsUser: proto.Int64(1001), Privileged: proto.Bool(true), ReadOnlyRootFilesystem: proto.Bool(true),
		AllowPrivilegeEscalation: proto.Bool(true), Capabilities: &v1.Capabilities{Add: []string{"NET_ADMIN"}, Drop: []string{"NET_RAW"}},
		SeccompProfile: &v1.SeccompProfile{Type: "Localhost", LocalhostProfile: proto.String("p/audit.json")},
	}
	w := e.worker(pod)
	e.sync(w)
	run := e.rt.running()
	if len(run) != 1 {
		t.Fatalf("not running: %v", containerState(w.status, "app"))
	}
	got := e.rt.containers[run[0].ID].cfg.Security
	if *got.RunAsUser != 1001 || *got.RunAsGroup != 2000 || !got.Privileged || !got.ReadOnlyRootfs || got.NoNewPrivs {
		t.Errorf("security %+v", got)
	}
	if strings.Join(got.CapAdd, ",") != "NET_ADMIN" || strings.Join(got.CapDrop, ",") != "NET_RAW" {
		t.Errorf("capabilities add %v drop %v", got.CapAdd, got.CapDrop)
	}
	if len(got.SupplementalGroups) != 2 || got.SupplementalGroups[0] != 5 || got.SupplementalGroups[1] != 7 {
		t.Errorf("supplemental groups %v, want [5 7]", got.SupplementalGroups)
	}
	if want := filepath.Join(e.m.cfg.RootDir, "seccomp", "p", "audit.json"); got.Seccomp != (runtime.SeccompProfile{Type: runtime.SeccompLocalhost, LocalhostPath: want}) {
		t.Errorf("seccomp %+v, want Localhost %s", got.Seccomp, want)
	}
	sb := e.rt.sandboxes[run[0].SandboxID].Config
	if sb.Sysctls["net.ipv4.tcp_syncookies"] != "1" || !sb.Privileged {
		t.Errorf("sandbox sysctls %v privileged %v", sb.Sysctls, sb.Privileged)
	}

	pod2 := newPod("plain", "app")
	pod2.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: proto.Bool(false)}
	pod2.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: "RuntimeDefault"}}
	sc := e.m.cfg.securityConfig(pod2, pod2.Spec.Containers[0])
	if !sc.NoNewPrivs || sc.Seccomp.Type != runtime.SeccompRuntimeDefault || sc.RunAsUser != nil {
		t.Errorf("security %+v, want no_new_privs, RuntimeDefault, the image's user", sc)
	}
}

// TestFSGroupOwnership: an emptyDir and a secret volume belong to the
// pod's fsGroup (set-group-ID directories, group-writable or -readable
// files); a hostPath is left alone.
func TestFSGroupOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another group needs root")
	}
	e := newTestEnv(t)
	e.src.secrets["default/sec"] = &v1.Secret{Data: map[string][]byte{"k": []byte("v")}}
	host := t.TempDir()
	pod := newPod("fsg", "app")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FsGroup: proto.Int64(2345)}
	pod.Spec.Volumes = []*v1.Volume{
		{Name: "scratch", EmptyDir: &v1.EmptyDirVolumeSource{}},
		{Name: "sec", Secret: &v1.SecretVolumeSource{SecretName: "sec", DefaultMode: proto.Int32(0o400)}},
		{Name: "host", HostPath: &v1.HostPathVolumeSource{Path: host}},
	}
	for _, v := range pod.Spec.Volumes {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, &v1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	w := e.worker(pod)
	e.sync(w)
	if len(e.rt.running()) != 1 {
		t.Fatalf("not running: %v", containerState(w.status, "app"))
	}
	check := func(p string, wantGid uint32, wantMode os.FileMode) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != wantGid || fi.Mode()&wantMode != wantMode {
			t.Errorf("%s: gid %d mode %v, want gid %d and mode bits %v", p, gid, fi.Mode(), wantGid, wantMode)
		}
	}
	check(e.m.cfg.volumeDir(w.uid, "empty-dir", "scratch"), 2345, os.ModeSetgid|0o770)
	check(e.m.cfg.volumeDir(w.uid, "secret", "sec"), 2345, os.ModeSetgid|0o550)
	check(filepath.Join(e.m.cfg.volumeDir(w.uid, "secret", "sec"), "k"), 2345, 0o440)
	if fi, _ := os.Stat(host); fi.Sys().(*syscall.Stat_t).Gid == 2345 {
		t.Error("the hostPath was given to the fsGroup")
	}
	// A second sync leaves the secret's file as it is (no rewrite churn).
	before, _ := os.Stat(filepath.Join(e.m.cfg.volumeDir(w.uid, "secret", "sec"), "k"))
	e.sync(w)
	after, _ := os.Stat(filepath.Join(e.m.cfg.volumeDir(w.uid, "secret", "sec"), "k"))
	if !os.SameFile(before, after) {
		t.Error("the secret's file was rewritten by a sync that changed nothing")
	}
}
