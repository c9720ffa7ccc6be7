package pod

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestResourceFieldValue(t *testing.T) {
	pod := newPod("r", "app", "nolimit")
	pod.Spec.Containers[0].Resources = &v1.ResourceRequirements{
		Limits:   map[string]string{"cpu": "1500m", "memory": "100Mi"},
		Requests: map[string]string{"cpu": "250m", "memory": "64Mi"},
	}
	alloc := map[string]string{"cpu": "4", "memory": "8Gi"}
	for _, c := range []struct {
		container, resource, divisor, want string
	}{
		{"app", "limits.cpu", "", "2"}, // 1.5 cores rounded up
		{"app", "limits.cpu", "1m", "1500"},
		{"app", "requests.cpu", "1m", "250"},
		{"app", "limits.memory", "", "104857600"},
		{"app", "limits.memory", "1Mi", "100"},
		{"app", "requests.memory", "1Gi", "1"}, // 64Mi rounded up
		{"app", "limits.memory", "0", "104857600"},
		{"nolimit", "limits.cpu", "1", "4"}, // the node's allocatable
		{"nolimit", "limits.memory", "1Mi", "8192"},
		{"nolimit", "requests.cpu", "1m", "0"},
		{"nolimit", "limits.ephemeral-storage", "", "0"},
	} {
		got, err := resourceFieldValue(pod, &v1.ResourceFieldSelector{ContainerName: c.container, Resource: c.resource, Divisor: c.divisor}, "", alloc)
		if err != nil || got != c.want {
			t.Errorf("%s %s / %q: got %q (%v), want %q", c.container, c.resource, c.divisor, got, err, c.want)
		}
	}
	if _, err := resourceFieldValue(pod, &v1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}, "", alloc); err == nil {
		t.Error("an unknown container was accepted")
	}
	// In env the container is the one whose variable it is.
	if got, _ := resourceFieldValue(pod, &v1.ResourceFieldSelector{Resource: "requests.memory", Divisor: "1Mi"}, "app", alloc); got != "64" {
		t.Errorf("env's own container: got %q, want 64", got)
	}
}

func TestVolumeFieldValues(t *testing.T) {
	pod := newPod("web", "app")
	pod.Metadata.Labels = map[string]string{"tier": "front", "app": "web"}
	pod.Metadata.Annotations = map[string]string{"note": "say \"hi\"\n"}
	for fp, want := range map[string]string{
		"metadata.labels":           "app=\"web\"\ntier=\"front\"",
		"metadata.annotations":      `note="say \"hi\"\n"`,
		"metadata.labels['tier']":   "front",
		`metadata.labels["app"]`:    "web",
		"metadata.annotations['x']": "",
		"metadata.name":             "web",
		"metadata.namespace":        "default",
		"metadata.uid":              "uid-web",
	} {
		if got, err := volumeFieldValue(pod, fp); err != nil || got != want {
			t.Errorf("%s: got %q (%v), want %q", fp, got, err, want)
		}
	}
	if _, err := volumeFieldValue(pod, "status.podIP"); err == nil {
		t.Error("status.podIP accepted in a volume")
	}
}

func TestProjectedVolumeFiles(t *testing.T) {
	src := &fakeSources{
		configMaps: map[string]*v1.ConfigMap{"default/cfg": {Data: map[string]string{"a": "A", "b": "B"}, BinaryData: map[string][]byte{"bin": {0, 1}}}},
		secrets:    map[string]*v1.Secret{"default/tls": {Data: map[string][]byte{"tls.key": []byte("K")}}},
	}
	pod := newPod("web", "app")
	pod.Metadata.Labels = map[string]string{"app": "web"}
	vol := &v1.Volume{Name: "all", Projected: &v1.ProjectedVolumeSource{DefaultMode: proto.Int32(0o440), Sources: []*v1.VolumeProjection{
		{ConfigMap: &v1.ConfigMapProjection{Name: "cfg", Items: []*v1.KeyToPath{{Key: "a", Path: "conf/a", Mode: proto.Int32(0o600)}}}},
		{Secret: &v1.SecretProjection{Name: "tls"}},
		{ConfigMap: &v1.ConfigMapProjection{Name: "missing", Optional: true}},
		{DownwardApi: &v1.DownwardAPIProjection{Items: []*v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
	}}}
	files, err := volumeFiles(context.Background(), Config{}, src, pod, vol, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fileSpec{
		"conf/a":  {[]byte("A"), 0o600},
		"tls.key": {[]byte("K"), 0o440},
		"labels":  {[]byte(`app="web"`), 0o440},
	}
	if len(files) != len(want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	for p, w := range want {
		if f := files[p]; string(f.data) != string(w.data) || f.mode != w.mode {
			t.Errorf("%s: %q %v, want %q %v", p, f.data, f.mode, w.data, w.mode)
		}
	}
	// An fsGroup adds group read to every file.
	files, _ = volumeFiles(context.Background(), Config{}, src, pod, vol, 0o440)
	if files["conf/a"].mode != 0o640 {
		t.Errorf("fsGroup: conf/a mode %v, want 0640", files["conf/a"].mode)
	}

	for name, bad := range map[string]*v1.Volume{
		"missing configMap": {ConfigMap: &v1.ConfigMapVolumeSource{Name: "missing"}},
		"missing key":       {ConfigMap: &v1.ConfigMapVolumeSource{Name: "cfg", Items: []*v1.KeyToPath{{Key: "zz", Path: "zz"}}}},
		"missing secret":    {Projected: &v1.ProjectedVolumeSource{Sources: []*v1.VolumeProjection{{Secret: &v1.SecretProjection{Name: "nope"}}}}},
		"token without a token source": {Projected: &v1.ProjectedVolumeSource{Sources: []*v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}},
	} {
		if _, err := volumeFiles(context.Background(), Config{}, src, pod, bad, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// An optional configMap's missing key is left out.
	files, err = volumeFiles(context.Background(), Config{}, src, pod, &v1.Volume{ConfigMap: &v1.ConfigMapVolumeSource{
		Name: "cfg", Optional: true, Items: []*v1.KeyToPath{{Key: "zz", Path: "zz"}, {Key: "b", Path: "b"}}}}, 0)
	if err != nil || len(files) != 1 || string(files["b"].data) != "B" {
		t.Errorf("optional items: %v, %v", files, err)
	}
}

// A downward API volume follows the pod's labels at the next sync after
// they change, through the ..data swap.
func TestDownwardVolumeFollowsLabels(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("dw", "app")
	pod.Metadata.Labels = map[string]string{"v": "1"}
	pod.Spec.Volumes = []*v1.Volume{{Name: "info", DownwardApi: &v1.DownwardAPIVolumeSource{DefaultMode: proto.Int32(0o644), Items: []*v1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: proto.Int32(0o400)},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "info", MountPath: "/etc/podinfo"}}
	w := e.worker(pod)
	e.sync(w)
	if len(e.rt.running()) != 1 {
		t.Fatalf("not running: %v", containerState(w.status, "app"))
	}
	dir := e.m.cfg.volumeDir(w.uid, "downward-api", "info")
	read := func(p string) (string, fs.FileMode) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(filepath.Join(dir, p))
		return string(b), fi.Mode().Perm()
	}
	if got, mode := read("labels"); got != `v="1"` || mode != 0o644 {
		t.Errorf("labels %q mode %v", got, mode)
	}
	if got, mode := read("name"); got != "dw" || mode != 0o400 {
		t.Errorf("name %q mode %v", got, mode)
	}
	var mounts []string
	e.rt.mu.Lock()
	for _, c := range e.rt.containers {
		for _, m := range c.cfg.Mounts {
			mounts = append(mounts, m.HostPath+" "+m.ContainerPath)
		}
	}
	e.rt.mu.Unlock()
	if len(mounts) != 1 || !strings.HasSuffix(mounts[0], "/downward-api/info /etc/podinfo") {
		t.Errorf("mounts %v, want the volume's directory at /etc/podinfo", mounts)
	}
	up := proto.Clone(pod).(*v1.Pod)
	up.Metadata.Labels = map[string]string{"v": "2", "extra": "x"}
	w.update(up)
	e.sync(w)
	if got, _ := read("labels"); got != "extra=\"x\"\nv=\"2\"" {
		t.Errorf("labels after the change %q", got)
	}
}

// An env var's fieldRef reads one label or annotation, the pod's names and
// addresses (podIPs and hostIPs are the one IP of a single-stack node).
func TestEnvFieldValues(t *testing.T) {
	pod := newPod("web", "app")
	pod.Metadata.Labels = map[string]string{"app.kubernetes.io/name": "web"}
	pod.Metadata.Annotations = map[string]string{"note": "hi"}
	pod.Spec.NodeName, pod.Spec.ServiceAccountName = "node1", "default"
	f := podFields{podIP: "10.244.1.5", hostIP: "10.123.0.11"}
	for fp, want := range map[string]string{
		"metadata.labels['app.kubernetes.io/name']": "web",
		`metadata.annotations["note"]`:              "hi",
		"metadata.labels['missing']":                "",
		"metadata.uid":                              "uid-web",
		"spec.nodeName":                             "node1",
		"spec.serviceAccountName":                   "default",
		"status.podIP":                              "10.244.1.5",
		"status.podIPs":                             "10.244.1.5",
		"status.hostIPs":                            "10.123.0.11",
	} {
		if got, err := fieldValue(pod, fp, f); err != nil || got != want {
			t.Errorf("%s: got %q (%v), want %q", fp, got, err, want)
		}
	}
}
