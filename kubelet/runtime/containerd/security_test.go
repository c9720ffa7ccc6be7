package containerd

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/securitytest"
)

// TestSecurityContext runs the shared security cases (user and groups,
// read-only rootfs, capabilities, no_new_privs, seccomp, privileged,
// masked paths, sysctls) in one pod on the native backend.
func TestSecurityContext(t *testing.T) {
	e := newEnv(t)
	profiles, data := t.TempDir(), t.TempDir()
	if err := securitytest.WriteProfile(profiles); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o777); err != nil {
		t.Fatal(err)
	}
	p := e.runPod("security", func(c *runtime.SandboxConfig) { c.Sysctls = securitytest.Sysctls; c.Privileged = true })
	cases := securitytest.Cases(profiles)
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = e.container(p, runtime.ContainerConfig{
			Name:     c.Name,
			Command:  []string{"sh", "-c", c.Script},
			Mounts:   []runtime.Mount{{HostPath: data, ContainerPath: securitytest.DataPath}},
			Security: c.Security,
		})
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			st := e.waitState(ids[i], runtime.ContainerExited, 30*time.Second)
			log := readLog(t, st.LogPath)
			for _, w := range c.Want {
				if !strings.Contains(log, w) {
					t.Errorf("log does not hold %q:\n%s", w, log)
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

// TestImageUser: ImageStatus reports the image's configured user (root
// for busybox), for the kubelet's runAsNonRoot check.
func TestImageUser(t *testing.T) {
	e := newEnv(t)
	st, err := e.rt.ImageStatus(context.Background(), images.BusyboxRef)
	if err != nil {
		t.Fatal(err)
	}
	if st.User != "" && st.User != "0" && st.User != "root" {
		t.Fatalf("busybox user %q, want root", st.User)
	}
}
