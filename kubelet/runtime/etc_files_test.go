package runtime

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestWriteEtcFiles(t *testing.T) {
	dir := t.TempDir()
	files, err := WriteEtcFiles(dir, PodEtc{
		Hostname: "web-0",
		IPs:      []string{"10.244.1.5"},
		DNS: DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"},
			Options:  []string{"ndots:5"},
		},
		HostAliases: []HostAlias{{IP: "10.0.0.9", Hostnames: []string{"db", "db.lab"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{files.HostnamePath, "web-0\n"},
		{files.ResolvConfPath, "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"},
	} {
		if got := readFile(t, tc.path); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.path, got, tc.want)
		}
	}
	hosts := readFile(t, files.HostsPath)
	for _, want := range []string{"127.0.0.1\tlocalhost\n", "10.244.1.5\tweb-0\n", "10.0.0.9\tdb\tdb.lab\n"} {
		if !strings.Contains(hosts, want) {
			t.Errorf("hosts lacks %q:\n%s", want, hosts)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("dir has %d entries, want 3 (no temp files left)", len(entries))
	}
	if _, err := WriteEtcFiles(dir, PodEtc{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no hostname: err = %v, want ErrInvalid", err)
	}
}

func TestConfigValidate(t *testing.T) {
	okC := ContainerConfig{Name: "c", Image: "busybox", LogPath: "/var/log/c.log"}
	okS := SandboxConfig{Pod: PodRef{Namespace: "ns", Name: "p", UID: "u"}, NetNSPath: "/run/netns/x"}
	tests := []struct {
		name string
		err  error
		want string // substring naming the field; "" for valid
	}{
		{"valid container", okC.Validate(), ""},
		{"valid sandbox", okS.Validate(), ""},
		{"no image", func() error { c := okC; c.Image = ""; return c.Validate() }(), "image"},
		{"relative log", func() error { c := okC; c.LogPath = "c.log"; return c.Validate() }(), "log path"},
		{"relative mount", func() error {
			c := okC
			c.Mounts = []Mount{{HostPath: "/x", ContainerPath: "data"}}
			return c.Validate()
		}(), "mounts[0].containerPath"},
		{"bad env", func() error { c := okC; c.Env = []EnvVar{{Name: "A=B"}}; return c.Validate() }(), "env[0].name"},
		{"reserved label", func() error {
			c := okC
			c.Labels = map[string]string{ReservedLabelPrefix + "x": "y"}
			return c.Validate()
		}(), "reserved"},
		{"no uid", func() error { s := okS; s.Pod.UID = ""; return s.Validate() }(), "pod uid"},
		{"netns with host network", func() error { s := okS; s.HostNetwork = true; return s.Validate() }(), "netns path"},
		{"bad port", func() error {
			s := okS
			s.PortMappings = []PortMapping{{HostPort: 0, ContainerPort: 80}}
			return s.Validate()
		}(), "port mappings[0]"},
		{"relative log dir", func() error { s := okS; s.LogDirectory = "logs"; return s.Validate() }(), "log directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("unexpected error %v", tc.err)
				}
				return
			}
			if !errors.Is(tc.err, ErrInvalid) || !strings.Contains(tc.err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid naming %q", tc.err, tc.want)
			}
		})
	}
}
