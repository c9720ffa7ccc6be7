package kubelet_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// A projected volume (a configMap key, the downward API's labels, the
// namespace's kube-root-ca.crt) and a downwardAPI volume (a resource)
// show their files at the right paths with the right modes, behind the
// atomic writer's ..data symlink, and a label change reaches the file.
func TestProjectedAndDownwardAPIVolumes(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	const ns = "projected"
	ensureNamespace(t, c.Client, ns)
	if _, err := client.For[*v1.ConfigMap](c.Client).Create(ctx, &v1.ConfigMap{
		Metadata: &v1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"greeting": "hello", "unused": "x"}}); err != nil {
		t.Fatal(err)
	}
	pod := busyboxPod(ns, "info", "node1", "exec sleep 3600")
	pod.Metadata.Labels = map[string]string{"tier": "front", "rev": "1"}
	pod.Spec.Containers[0].Resources = &v1.ResourceRequirements{Limits: map[string]string{"memory": "96Mi", "cpu": "250m"}}
	pod.Spec.Volumes = []*v1.Volume{
		{Name: "all", Projected: &v1.ProjectedVolumeSource{DefaultMode: proto.Int32(0o440), Sources: []*v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{Name: "cfg", Items: []*v1.KeyToPath{{Key: "greeting", Path: "conf/greeting", Mode: proto.Int32(0o400)}}}},
			{ConfigMap: &v1.ConfigMapProjection{Name: "kube-root-ca.crt", Items: []*v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardApi: &v1.DownwardAPIProjection{Items: []*v1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}, Mode: proto.Int32(0o644)},
			}}},
		}}},
		{Name: "res", DownwardApi: &v1.DownwardAPIVolumeSource{Items: []*v1.DownwardAPIVolumeFile{
			{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory", Divisor: "1Mi"}},
			{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu", Divisor: "1m"}},
		}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "all", MountPath: "/etc/all"}, {Name: "res", MountPath: "/etc/res"}}
	createPod(t, c.Client, pod)
	waitPod(t, c.Client, ns, "info", 90*time.Second, "Running", running)

	out, code := execIn(t, c.Client, ns, "info", "stat", "-L", "-c", "%a %n", "/etc/all/conf/greeting", "/etc/all/ca.crt", "/etc/all/labels", "/etc/all/namespace", "/etc/res/mem")
	want := "400 /etc/all/conf/greeting\n440 /etc/all/ca.crt\n440 /etc/all/labels\n644 /etc/all/namespace\n644 /etc/res/mem\n"
	if code != 0 || out != want {
		t.Errorf("modes (exit %d):\n%s\nwant\n%s", code, out, want)
	}
	for file, want := range map[string]string{
		"/etc/all/conf/greeting": "hello",
		"/etc/all/labels":        "rev=\"1\"\ntier=\"front\"",
		"/etc/all/namespace":     ns,
		"/etc/res/mem":           "96",
		"/etc/res/cpu":           "250",
	} {
		if out, code := execIn(t, c.Client, ns, "info", "cat", file); code != 0 || out != want {
			t.Errorf("%s: %q (exit %d), want %q", file, out, code, want)
		}
	}
	if out, _ := execIn(t, c.Client, ns, "info", "cat", "/etc/all/ca.crt"); !strings.HasPrefix(out, "-----BEGIN CERTIFICATE-----") {
		t.Errorf("ca.crt is not the cluster CA: %q", out)
	}
	// The atomic writer's layout: visible names are symlinks into ..data.
	if out, code := execIn(t, c.Client, ns, "info", "sh", "-c", "readlink /etc/all/conf; readlink /etc/all/..data"); code != 0 || !strings.HasPrefix(out, "..data/conf\n..2") {
		t.Errorf("layout: %q (exit %d), want conf -> ..data/conf and ..data -> a timestamped directory", out, code)
	}

	// A label change is seen in the file without a restart.
	if _, err := client.For[*v1.Pod](c.Client).Mutate(ctx, ns, "info", false, func(p *v1.Pod) error {
		p.Metadata.Labels["rev"] = "2"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "the new label in /etc/all/labels", func() error {
		if out, _ := execIn(t, c.Client, ns, "info", "cat", "/etc/all/labels"); out != "rev=\"2\"\ntier=\"front\"" {
			return fmt.Errorf("labels file %q", out)
		}
		return nil
	})
	if p, _ := client.For[*v1.Pod](c.Client).Get(ctx, ns, "info"); containerStatus(p, "main").GetRestartCount() != 0 {
		t.Errorf("the container restarted: %v", containerStatus(p, "main"))
	}
}

// A serviceAccountToken projection: the kubelet requests a token bound to
// the pod; read from the container it authenticates as the pod's service
// account, and stops authenticating once the pod is deleted.
func TestServiceAccountTokenProjection(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	const ns = "satoken"
	pod := busyboxPod(ns, "tok", "node2", "exec sleep 3600")
	pod.Spec.Volumes = []*v1.Volume{{Name: "sa", Projected: &v1.ProjectedVolumeSource{Sources: []*v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: proto.Int64(3607)}},
		{DownwardApi: &v1.DownwardAPIProjection{Items: []*v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "sa", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	createPod(t, c.Client, pod)
	waitPod(t, c.Client, ns, "tok", 90*time.Second, "Running", running)
	tok, code := execIn(t, c.Client, ns, "tok", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token")
	if code != 0 || strings.Count(tok, ".") != 2 {
		t.Fatalf("token file: %q (exit %d), want a JWT", tok, code)
	}
	if out, _ := execIn(t, c.Client, ns, "tok", "stat", "-L", "-c", "%a", "/var/run/secrets/kubernetes.io/serviceaccount/token"); out != "644\n" {
		t.Errorf("token mode %q, want 644 (the projected default)", out)
	}
	tlsCfg, err := client.TLSFromFiles(filepath.Join(c.PKIDir(), "ca.crt"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	sa, err := client.New(client.Config{Server: c.Server, TLS: tlsCfg, Token: tok, UserAgent: "e2e-pod-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	who, err := v1.NewAuthClient(sa.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{})
	if err != nil || who.Name != "system:serviceaccount:"+ns+":default" {
		t.Fatalf("the pod's token: %v, %v; want system:serviceaccount:%s:default", who, err, ns)
	}
	if _, err := client.For[*v1.Pod](c.Client).Delete(ctx, ns, "tok", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c.Client, ns, "tok", 60*time.Second)
	wait.Eventually(t, 30*time.Second, "the deleted pod's token refused", func() error {
		if who, err := v1.NewAuthClient(sa.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{}); err == nil {
			return fmt.Errorf("still authenticates as %s", who.Name)
		}
		return nil
	})
}

// A pod created with no volumes gets Kubernetes' service account volume
// from the ServiceAccount admission; the kubelet fills it (the token from
// the token manager, ca.crt from the kube-root-ca.crt ConfigMap the
// controller-manager publishes, the namespace from the downward API), and
// an application in the pod using client-go's in-cluster config (token
// and ca.crt from the volume) is authenticated, over the apiserver's
// Kubernetes HTTP API, as system:serviceaccount:<ns>:default.
func TestServiceAccountTokenAutomount(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	const ns = "automount"
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	// The application: a static binary the pod gets from a hostPath (the
	// volume admission adds is the only one the pod did not ask for).
	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", "./internal/incluster")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./internal/incluster: %v\n%s", err, out)
	}
	host, port, _ := net.SplitHostPort(c.KubeServer)
	p := busyboxPod(ns, "api", "node1", "exec sleep 3600")
	p.Spec.Containers[0].Env = []*v1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: host}, {Name: "KUBERNETES_SERVICE_PORT", Value: port}}
	noToken := busyboxPod(ns, "none", "node1", "exec sleep 3600")
	noToken.Spec.AutomountServiceAccountToken = proto.Bool(false)
	noToken.Spec.Containers[0].Env = p.Spec.Containers[0].Env
	for _, p := range []*v1.Pod{p, noToken} {
		p.Spec.Volumes = []*v1.Volume{{Name: "app", HostPath: &v1.HostPathVolumeSource{Path: bin, Type: "Directory"}}}
		p.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "app", MountPath: "/app", ReadOnly: true}}
	}
	// hostPath needs the privileged level of Pod Security.
	if _, err := client.For[*v1.Namespace](c.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}); err != nil {
		t.Fatal(err)
	}
	pod := createPod(t, c.Client, p)
	if len(pod.Spec.Volumes) != 2 || !strings.HasPrefix(pod.Spec.Volumes[1].Name, "kube-api-access-") || len(pod.Spec.Containers[0].VolumeMounts) != 2 {
		t.Fatalf("volumes %v, mounts %v: want app and kube-api-access-xxxxx", pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts)
	}
	createPod(t, c.Client, noToken)
	waitPod(t, c.Client, ns, "api", 90*time.Second, "Running", running)
	waitPod(t, c.Client, ns, "none", 90*time.Second, "Running", running)

	if out, code := execIn(t, c.Client, ns, "api", "cat", dir+"namespace"); code != 0 || out != ns {
		t.Errorf("namespace file: %q (exit %d), want %q", out, code, ns)
	}
	ca, err := os.ReadFile(filepath.Join(c.PKIDir(), "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if out, code := execIn(t, c.Client, ns, "api", "cat", dir+"ca.crt"); code != 0 || out != string(ca) {
		t.Errorf("ca.crt (exit %d) is not the cluster CA:\n%s", code, out)
	}
	if out, _ := execIn(t, c.Client, ns, "api", "stat", "-L", "-c", "%a", dir+"token", dir+"ca.crt", dir+"namespace"); out != "644\n644\n644\n" {
		t.Errorf("modes %q, want 644 (defaultMode 420)", out)
	}
	if _, code := execIn(t, c.Client, ns, "api", "sh", "-c", "echo x > "+dir+"x"); code == 0 {
		t.Error("the token mount is writable")
	}
	if out, code := execIn(t, c.Client, ns, "api", "/app/incluster"); code != 0 || out != "system:serviceaccount:"+ns+":default\n" {
		t.Errorf("in-cluster client in the pod (exit %d): %q, want system:serviceaccount:%s:default", code, out, ns)
	}
	// Opted out: nothing mounted, so the in-cluster config has no token.
	if out, code := execIn(t, c.Client, ns, "none", "sh", "-c", "ls "+dir+"; /app/incluster"); code == 0 || !strings.Contains(out, "No such file") {
		t.Errorf("opted-out pod (exit %d): %q, want no token", code, out)
	}
}

// An emptyDir with a sizeLimit of 1Mi, written past it: the eviction
// manager evicts the pod (phase Failed, reason Evicted, Kubernetes'
// message), with a Warning Evicted event, and its container is killed.
func TestEmptyDirSizeLimitEviction(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	const ns = "sizelimit"
	pod := busyboxPod(ns, "filler", "node2", "dd if=/dev/zero of=/scratch/fill bs=1024 count=2048 && exec sleep 3600")
	pod.Spec.Volumes = []*v1.Volume{{Name: "scratch", EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: "1Mi"}}}
	pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	createPod(t, c.Client, pod)
	got := waitPod(t, c.Client, ns, "filler", 90*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.GetPhase() == "Failed" })
	const msg = `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	if got.Status.Reason != "Evicted" || got.Status.Message != msg {
		t.Errorf("status reason %q message %q, want Evicted, %q", got.Status.Reason, got.Status.Message, msg)
	}
	if cs := containerStatus(got, "main"); cs.GetState().GetTerminated() == nil {
		t.Errorf("container state %v, want terminated", cs.GetState())
	}
	waitEvent(t, c.Client, ns, "filler", "Evicted: "+msg, 10*time.Second)
}

// env[].valueFrom.fileKeyRef: an init container writes an env file into
// an emptyDir; the app container gets the key's value (and a variable
// that refers to it), an optional missing key stays unset.
func TestEnvFileKeyRef(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	const ns = "envfile"
	pod := busyboxPod(ns, "app", "node1", "exec sleep 3600")
	pod.Spec.Volumes = []*v1.Volume{{Name: "config", EmptyDir: &v1.EmptyDirVolumeSource{}}}
	pod.Spec.InitContainers = []*v1.Container{{
		Name: "write", Image: pod.Spec.Containers[0].Image, ImagePullPolicy: "IfNotPresent",
		Command:      []string{"sh", "-c", `printf '# made by the init container\nDB_HOST=db.internal\nGREETING="hello there"\n' > /config/app.env`},
		VolumeMounts: []*v1.VolumeMount{{Name: "config", MountPath: "/config"}},
	}}
	ref := func(key string, optional bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "config", Path: "app.env", Key: key, Optional: optional}}
	}
	pod.Spec.Containers[0].Env = []*v1.EnvVar{
		{Name: "DB_HOST", ValueFrom: ref("DB_HOST", false)},
		{Name: "GREETING", ValueFrom: ref("GREETING", false)},
		{Name: "EXTRA", ValueFrom: ref("EXTRA", true)},
		{Name: "URL", Value: "postgres://$(DB_HOST)/app"},
	}
	createPod(t, c.Client, pod)
	waitPod(t, c.Client, ns, "app", 90*time.Second, "Running", running)
	out, code := execIn(t, c.Client, ns, "app", "sh", "-c", `echo "$DB_HOST|$GREETING|$URL|${EXTRA-unset}"`)
	if want := "db.internal|hello there|postgres://db.internal/app|unset\n"; code != 0 || out != want {
		t.Errorf("env: %q (exit %d), want %q", out, code, want)
	}
}

// A container with limits.ephemeral-storage 1Mi writing 3 MiB into its
// root file system (its writable layer): the eviction manager evicts the
// pod with Kubernetes' container message (the pod's total, 1Mi + 64Mi of
// its other container, is not reached, so the container check speaks),
// phase Failed, reason Evicted, a Warning Evicted event. The writable
// layer's usage comes from the runtime's stats (containerd's CRI
// refreshes it every 10 s; the native backend asks the snapshotter).
func TestEphemeralStorageLimitEviction(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	const ns = "ephemeral"
	pod := busyboxPod(ns, "writer", "node1", "dd if=/dev/zero of=/fill bs=1024 count=3072 && exec sleep 3600")
	pod.Spec.Containers[0].Resources = &v1.ResourceRequirements{Limits: map[string]string{"ephemeral-storage": "1Mi"}}
	pod.Spec.Containers = append(pod.Spec.Containers, &v1.Container{
		Name: "idle", Image: pod.Spec.Containers[0].Image, ImagePullPolicy: "IfNotPresent", Command: []string{"sleep", "3600"},
		Resources: &v1.ResourceRequirements{Limits: map[string]string{"ephemeral-storage": "64Mi"}},
	})
	createPod(t, c.Client, pod)
	got := waitPod(t, c.Client, ns, "writer", 90*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.GetPhase() == "Failed" })
	const msg = `Container main exceeded its local ephemeral storage limit "1Mi". `
	if got.Status.Reason != "Evicted" || got.Status.Message != msg {
		t.Errorf("status reason %q message %q, want Evicted, %q", got.Status.Reason, got.Status.Message, msg)
	}
	waitEvent(t, c.Client, ns, "writer", "Evicted: "+msg, 10*time.Second)
}

// TestVolumeMountStatus: a running container's status lists its volume
// mounts as Kubernetes 1.30+ does, through the real runtime: a writable
// emptyDir without recursiveReadOnly, a read-only one with Disabled, a
// recursiveReadOnly IfPossible one resolved to Enabled or Disabled (what
// the runtime can: containerd 1.x cannot), and the service account
// token's.
func TestVolumeMountStatus(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	const ns = "mountstatus"
	pod := busyboxPod(ns, "mounts", "node1", "exec sleep 3600")
	pod.Spec.Volumes = []*v1.Volume{{Name: "scratch", EmptyDir: &v1.EmptyDirVolumeSource{}}, {Name: "shared", EmptyDir: &v1.EmptyDirVolumeSource{}}}
	pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "shared", MountPath: "/ro", ReadOnly: true},
		{Name: "shared", MountPath: "/rro", ReadOnly: true, RecursiveReadOnly: proto.String("IfPossible")},
	}
	createPod(t, c.Client, pod)
	p := waitPod(t, c.Client, ns, "mounts", 90*time.Second, "Running", running)
	// Every mount of the stored spec, the service account admission's
	// kube-api-access-* (read-only) last.
	got := containerStatus(p, "main").GetVolumeMounts()
	spec := p.GetSpec().GetContainers()[0].GetVolumeMounts()
	if len(got) != len(spec) || len(got) != 4 {
		t.Fatalf("volumeMounts %v, want one per mount of the spec (4): %v", got, spec)
	}
	if m := got[3]; m.Name != spec[3].Name || m.MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !m.ReadOnly || m.GetRecursiveReadOnly() != "Disabled" {
		t.Errorf("volumeMounts[3] = %v, want the service account volume, read-only, Disabled", m)
	}
	if m := got[0]; m.Name != "scratch" || m.MountPath != "/scratch" || m.ReadOnly || m.RecursiveReadOnly != nil {
		t.Errorf("volumeMounts[0] = %v, want scratch at /scratch, writable, no recursiveReadOnly", m)
	}
	if m := got[1]; m.Name != "shared" || m.MountPath != "/ro" || !m.ReadOnly || m.GetRecursiveReadOnly() != "Disabled" {
		t.Errorf("volumeMounts[1] = %v, want shared at /ro, read-only, Disabled", m)
	}
	if m := got[2]; m.MountPath != "/rro" || !m.ReadOnly || (m.GetRecursiveReadOnly() != "Enabled" && m.GetRecursiveReadOnly() != "Disabled") {
		t.Errorf("volumeMounts[2] = %v, want /rro read-only, Enabled or Disabled", m)
	}
	// The mount the status calls read-only is.
	if out, code := execIn(t, c.Client, ns, "mounts", "touch", "/ro/x"); code == 0 {
		t.Errorf("a write under the read-only mount succeeded: %q", out)
	}
}
