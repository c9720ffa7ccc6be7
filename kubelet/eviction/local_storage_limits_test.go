package eviction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func limited(name string, limits ...string) *v1.Pod {
	p := pod(name, BestEffort, 0, 1)
	p.Spec.Containers = nil
	for i, l := range limits {
		c := &v1.Container{Name: fmt.Sprintf("c%d", i), Resources: &v1.ResourceRequirements{}}
		if l != "" {
			c.Resources.Limits = map[string]string{"ephemeral-storage": l}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

const mi = 1 << 20

// TestStorageOverLimit: Kubernetes' pod check (usage with emptyDirs over
// the sum of the limits) before its container check (logs + writable
// layer, the layer left out on a dedicated image file system), with
// their messages.
func TestStorageOverLimit(t *testing.T) {
	root := t.TempDir()
	emptyDir := func(uid, vol string) string { return filepath.Join(root, uid, vol) }
	if err := os.MkdirAll(emptyDir("uid-dirs", "scratch"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(emptyDir("uid-dirs", "scratch"), "f"), make([]byte, 2*mi), 0o644); err != nil {
		t.Fatal(err)
	}
	withDir := limited("dirs", "1Mi", "2Mi")
	withDir.Metadata.Uid = "uid-dirs"
	withDir.Spec.Volumes = []*v1.Volume{{Name: "scratch", EmptyDir: &v1.EmptyDirVolumeSource{}}}
	sidecar := limited("sidecar", "1Mi")
	sidecar.Spec.InitContainers = []*v1.Container{
		{Name: "init", Resources: &v1.ResourceRequirements{Limits: map[string]string{"ephemeral-storage": "8Mi"}}},
		{Name: "side", RestartPolicy: "Always", Resources: &v1.ResourceRequirements{Limits: map[string]string{"ephemeral-storage": "1Mi"}}},
	}
	cases := []struct {
		name      string
		pod       *v1.Pod
		usage     map[string]ContainerStorage
		dedicated bool
		msg, sig  string
	}{
		{"no limit", limited("none", "", ""), map[string]ContainerStorage{"c0": {RootFS: 100 * mi}}, false, "", ""},
		{"under", limited("under", "1Mi"), map[string]ContainerStorage{"c0": {RootFS: mi / 2, Logs: mi / 4}}, false, "", ""},
		{"exactly at the limit", limited("at", "1Mi"), map[string]ContainerStorage{"c0": {RootFS: mi / 2, Logs: mi / 2}}, false, "", ""},
		{"container over by its writable layer", limited("layer", "1Mi", "100Mi"), map[string]ContainerStorage{"c0": {RootFS: 3 * mi}}, false,
			`Container c0 exceeded its local ephemeral storage limit "1Mi". `, SignalEphemeralContainerFsLimit},
		{"container over by layer and logs", limited("logs", "100Mi", "1Mi"), map[string]ContainerStorage{"c1": {RootFS: mi / 2, Logs: mi}}, false,
			`Container c1 exceeded its local ephemeral storage limit "1Mi". `, SignalEphemeralContainerFsLimit},
		{"dedicated image fs: the layer does not count", limited("dedicated", "1Mi", "100Mi"), map[string]ContainerStorage{"c0": {RootFS: 3 * mi}}, true, "", ""},
		{"dedicated image fs: logs count", limited("dedicated-logs", "1Mi", "100Mi"), map[string]ContainerStorage{"c0": {RootFS: 3 * mi, Logs: 2 * mi}}, true,
			`Container c0 exceeded its local ephemeral storage limit "1Mi". `, SignalEphemeralContainerFsLimit},
		{"pod over the sum", limited("sum", "1Mi", "1Mi", ""), map[string]ContainerStorage{"c0": {RootFS: mi / 2}, "c1": {RootFS: mi / 2}, "c2": {RootFS: 2 * mi}}, false,
			"Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ", SignalEphemeralPodFsLimit},
		{"pod over with its emptyDir", withDir, map[string]ContainerStorage{"c0": {Logs: mi / 2}, "c1": {Logs: mi / 2}}, false,
			"Pod ephemeral local storage usage exceeds the total limit of containers 3Mi. ", SignalEphemeralPodFsLimit},
		{"pod limit of an init container", sidecar, map[string]ContainerStorage{"c0": {RootFS: mi / 2}, "side": {RootFS: mi / 2}}, false, "", ""},
		{"pod limit of an init container, over", sidecar, map[string]ContainerStorage{"c0": {RootFS: mi / 2}, "side": {RootFS: mi / 2, Logs: 9 * mi}}, false,
			"Pod ephemeral local storage usage exceeds the total limit of containers 8Mi. ", SignalEphemeralPodFsLimit},
		{"a container not running is not measured", limited("gone", "1Mi"), nil, false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg, sig := storageOverLimit(c.pod, c.usage, c.dedicated, emptyDir)
			if msg != c.msg || sig != c.sig {
				t.Errorf("got %q (%s), want %q (%s)", msg, sig, c.msg, c.sig)
			}
		})
	}
}

// TestStorageLimitEviction: a round evicts the pods over their
// containers' limits (usage asked only because a pod has a limit), after
// and besides the emptyDir ones, and counts them by signal.
func TestStorageLimitEviction(t *testing.T) {
	over, under := limited("over", "1Mi", "100Mi"), limited("under", "4Mi") // over: its pod limit is not reached
	asked := 0
	ev := &fakeEvictor{}
	m, err := New(Config{Evictor: ev, EmptyDirPath: func(uid, vol string) string { return "/nonexistent" },
		Pods: func() []*v1.Pod { return []*v1.Pod{under, over} },
		LocalStorage: func(context.Context) map[string]map[string]ContainerStorage {
			asked++
			return map[string]map[string]ContainerStorage{
				"over": {"c0": {RootFS: 3 * mi}}, "under": {"c0": {RootFS: 3 * mi}},
			}
		},
		Observe: func() map[string]Observation { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	m.Synchronize(context.Background())
	if fmt.Sprint(ev.evicted) != "[over]" || ev.msgs[0] != `Container c0 exceeded its local ephemeral storage limit "1Mi". ` {
		t.Fatalf("evicted %v %q", ev.evicted, ev.msgs)
	}
	if got := testutil.ToFloat64(m.evictions.WithLabelValues(SignalEphemeralContainerFsLimit)); got != 1 {
		t.Errorf("evictions{signal=%q} = %v, want 1", SignalEphemeralContainerFsLimit, got)
	}
	none := limited("none", "")
	m.cfg.Pods = func() []*v1.Pod { return []*v1.Pod{none} }
	asked = 0
	m.Synchronize(context.Background())
	if asked != 0 {
		t.Errorf("usage measured %d times with no limit on the node", asked)
	}
}
