package pod

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

func TestTerminationMessage(t *testing.T) {
	cfg := Config{RootDir: t.TempDir()}
	spec := &v1.Container{Name: "c", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "FallbackToLogsOnError"}
	mounts, err := cfg.terminationMount("uid", spec, 2)
	if err != nil || len(mounts) != 1 || mounts[0].ContainerPath != "/dev/termination-log" {
		t.Fatalf("mount %v, %v", mounts, err)
	}
	if fi, err := os.Stat(mounts[0].HostPath); err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("termination file %v, %v: want mode 0666", fi, err)
	}
	log := cfg.LogPath("uid", "c", 2)
	var lines []string
	for i := range 100 {
		lines = append(lines, strings.Repeat("x", 10)+string(rune('a'+i%26)))
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exited := &runtime.ContainerStatus{Name: "c", Attempt: 2, State: runtime.ContainerExited, ExitCode: 1, LogPath: log, LogFormat: runtime.LogFormatRaw}

	// Nothing written and failed: the log's last lines, at most 2048 bytes.
	msg := cfg.terminationMessage("uid", spec, exited)
	if len(msg) != 80*12 || !strings.HasSuffix(msg, lines[99]+"\n") || !strings.HasPrefix(msg, lines[20]+"\n") {
		t.Errorf("fallback message (%d bytes) is not the last 80 lines:\n%s", len(msg), msg)
	}
	// Succeeded: no fallback.
	ok := *exited
	ok.ExitCode = 0
	if m := cfg.terminationMessage("uid", spec, &ok); m != "" {
		t.Errorf("fallback for a success: %q", m)
	}
	// Written: the file, capped at 4096 bytes.
	if err := os.WriteFile(mounts[0].HostPath, []byte(strings.Repeat("y", 5000)), 0o666); err != nil {
		t.Fatal(err)
	}
	if m := cfg.terminationMessage("uid", spec, exited); m != strings.Repeat("y", 4096) {
		t.Errorf("file message of %d bytes, want the first 4096", len(m))
	}
	if m, err := cfg.terminationMount("uid", &v1.Container{Name: "c"}, 0); m != nil || err != nil {
		t.Errorf("no path: %v %v", m, err)
	}
}

func TestMergeDNSConfig(t *testing.T) {
	cluster := runtime.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}}
	for _, tc := range []struct {
		name string
		base runtime.DNSConfig
		dc   *v1.PodDNSConfig
		want runtime.DNSConfig
	}{
		{"none", cluster, nil, cluster},
		{"merged", cluster, &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3"}, Searches: []string{"cluster.local", "x.example"},
			Options: []*v1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("2")}, {Name: "edns0"}}},
			runtime.DNSConfig{Servers: []string{"10.96.0.10", "1.1.1.1", "1.1.1.2"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "x.example"},
				Options: []string{"ndots:2", "edns0"}}},
		{"policy None", runtime.DNSConfig{}, &v1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}},
			runtime.DNSConfig{Servers: []string{"192.0.2.53"}}},
	} {
		if got := mergeDNSConfig(tc.base, tc.dc); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
