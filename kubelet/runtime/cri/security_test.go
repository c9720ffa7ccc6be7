package cri

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/securitytest"
)

// TestSecurityContext runs the shared security cases (user and groups,
// read-only rootfs, capabilities, no_new_privs, seccomp, privileged,
// masked paths, sysctls) in one pod through containerd's CRI plugin: the
// same results as the native backend.
func TestSecurityContext(t *testing.T) {
	require(t)
	profiles, data := t.TempDir(), t.TempDir()
	if err := securitytest.WriteProfile(profiles); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := sandboxConfig(t, "security")
	cfg.Sysctls, cfg.Privileged = securitytest.Sysctls, true
	p := runPod(t, cfg)
	cases := securitytest.Cases(profiles)
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = p.container(t, c.Name, c.Script, func(cc *runtime.ContainerConfig) {
			cc.Security = c.Security
			cc.Mounts = []runtime.Mount{{HostPath: data, ContainerPath: securitytest.DataPath}}
		})
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			st := waitState(t, ids[i], runtime.ContainerExited)
			var b strings.Builder
			if err := runtime.ReadLog(context.Background(), st.LogPath, runtime.LogOptions{Format: st.LogFormat}, &b); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.Want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("log does not hold %q:\n%s", w, b.String())
				}
			}
			if c.Check != nil {
				if err := c.Check(data); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestImageUser: ImageStatus reports the image's user as the CRI gives it
// (busybox runs as root).
func TestImageUser(t *testing.T) {
	require(t)
	st, err := testRuntime.ImageStatus(context.Background(), images.BusyboxRef)
	if err != nil {
		t.Fatal(err)
	}
	if st.User != "" && st.User != "0" && st.User != "root" {
		t.Fatalf("busybox user %q, want root", st.User)
	}
}
