package tugctl

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestDescribe(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	pod := mustCreate(t, e.c, testPod("web", map[string]string{"app": "web"}))
	setPodStatus(t, e.c, "web", &v1.PodStatus{
		Phase:      "Pending",
		Conditions: []*v1.Condition{{Type: "PodScheduled", Status: "True"}, {Type: "Ready", Status: "False"}},
		ContainerStatuses: []*v1.ContainerStatus{{Name: "c", State: &v1.ContainerState{
			Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"busybox:1\""},
		}}},
	})
	now := timestamppb.New(time.Now().Add(-time.Minute))
	event := func(name, uid string) *v1.Event {
		return &v1.Event{
			Metadata:       &v1.ObjectMeta{Name: name, Namespace: "default"},
			InvolvedObject: &v1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default", Uid: uid},
			Reason:         "Failed", Message: "Failed to pull image " + name, Type: "Warning",
			Source:         &v1.EventSource{Component: "kubelet"},
			FirstTimestamp: timestamppb.New(time.Now().Add(-5 * time.Minute)), LastTimestamp: now, Count: 3,
		}
	}
	mustCreate(t, e.c, event("mine", pod.Metadata.Uid))
	mustCreate(t, e.c, event("stale", "an-earlier-pod-of-the-same-name"))

	r := mustOK(t, e.run("describe", "pod", "web"))
	assertContains(t, "describe pod", r.out,
		"Name: web\n", "Namespace: default\n", "Labels: app=web\n", "Status: ImagePullBackOff\n",
		"Containers:\n c:\n Container ID: \n Image: busybox:1\n",
		"State: Waiting\n Reason: ImagePullBackOff\n",
		"Conditions:\n Type Status\n ---- ------\n PodScheduled True\n Ready False\n",
		"Events:\n Type Reason Age From Message\n",
		" Warning Failed 60s (x3 over 5m) kubelet Failed to pull image mine\n",
	)
	if strings.Contains(r.out, "stale") {
		t.Errorf("describe pod lists another incarnation's event:\n%s", r.out)
	}
	// The service account volume the apiserver added, as kubectl shows it.
	vol := pod.Spec.Volumes[0].Name
	assertContains(t, "describe pod (token volume)", r.out,
		"Mounts:\n /var/run/secrets/kubernetes.io/serviceaccount from "+vol+" (ro)\n",
		"Volumes:\n "+vol+":\n Type: Projected (a volume that contains injected data from multiple sources)\n"+
			" TokenExpirationSeconds: 3607\n ConfigMapName: kube-root-ca.crt\n ConfigMapOptional: false\n DownwardAPI: true\n")

	// A deployment names its new and old replica sets.
	d := mustCreate(t, e.c, testDeployment("app", 2, "app:2"))
	mustCreate(t, e.c, testReplicaSet(d, "app-one", "one", 1, 1, "app:1"))
	mustCreate(t, e.c, testReplicaSet(d, "app-two", "two", 2, 2, "app:2"))
	r = mustOK(t, e.run("describe", "deploy/app"))
	assertContains(t, "describe deploy", r.out, "Replicas: 2 desired | 0 updated | 0 total | 0 available | 0 unavailable",
		"OldReplicaSets: app-one (0/1 replicas created)\nNewReplicaSet: app-two (0/2 replicas created)", "Image: app:2")
	r = mustOK(t, e.run("describe", "rs", "app-one"))
	assertContains(t, "describe rs", r.out, "Controlled By: Deployment/app", "Replicas: 0 current / 1 desired",
		"Pods Status: 0 Running / 0 Waiting / 0 Succeeded / 0 Failed", "pod-template-hash=one")

	// A node lists its pods and conditions.
	mustCreate(t, e.c, &v1.Node{Metadata: &v1.ObjectMeta{Name: "node1"}, Spec: &v1.NodeSpec{Taints: []*v1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: "NoExecute"}}}})
	if _, err := e.c.Bind(ctx, "default", "web", "node1", 0); err != nil {
		t.Fatal(err)
	}
	r = mustOK(t, e.run("describe", "no", "node1"))
	assertContains(t, "describe node", r.out, "Taints: node.kubernetes.io/unreachable:NoExecute", "Non-terminated Pods: (1 in total)", "\n default web 0 0 ")

	// Kinds without a describer get the generic one; several objects are
	// separated by a blank line.
	mustCreate(t, e.c, &v1.Lease{Metadata: &v1.ObjectMeta{Name: "l1", Namespace: "default"}, Spec: &v1.LeaseSpec{HolderIdentity: "me", LeaseDurationSeconds: 15}})
	mustCreate(t, e.c, &v1.Lease{Metadata: &v1.ObjectMeta{Name: "l2", Namespace: "default"}})
	r = mustOK(t, e.run("describe", "leases"))
	if !strings.Contains(r.out, "Name:               l1\n") || !strings.Contains(r.out, "Spec:\n  holderIdentity: me\n  leaseDurationSeconds: 15\n") || !strings.Contains(r.out, "\n\nName:") {
		t.Errorf("describe leases:\n%s", r.out)
	}
	mustFail(t, e.run("describe", "pod", "nope"), `pods "nope" not found`)

	// Every kind describes without error.
	for _, k := range []string{"ns", "svc", "cm", "secrets", "ep", "ev"} {
		mustOK(t, e.run("describe", k))
	}
	_ = client.For[*v1.Pod](e.c)
}

// assertContains checks that out, with runs of spaces collapsed to one,
// contains every want: alignment is the tabwriter's business.
func assertContains(t *testing.T, what, out string, want ...string) {
	t.Helper()
	norm := spaces.ReplaceAllString(out, " ")
	for _, w := range want {
		if !strings.Contains(norm, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

var spaces = regexp.MustCompile(` +`)

// PersistentVolumes, claims and storage classes are described as kubectl
// does, a claim with the pods that use it; DaemonSets and StatefulSets get
// their own descriptions.
func TestDescribeVolumesAndSets(t *testing.T) {
	e := newEnv(t)
	mustCreate(t, e.c, &v1.PersistentVolume{Metadata: &v1.ObjectMeta{Name: "pv-1"},
		Spec: &v1.PersistentVolumeSpec{Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
			PersistentVolumeReclaimPolicy: "Retain", StorageClassName: "", Local: &v1.LocalVolumeSource{Path: "/data/pv-1"},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{{
				MatchFields: []*v1.LabelSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{"node1"}}}}}}}}})
	mustCreate(t, e.c, &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: &v1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: proto.String(""),
			Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}}}})
	p := testPod("user", nil)
	p.Spec.Volumes = []*v1.Volume{{Name: "d", PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	mustCreate(t, e.c, p)
	r := mustOK(t, e.run("describe", "pv", "pv-1"))
	assertContains(t, "describe pv", r.out, "Reclaim Policy:", "Retain", "Access Modes:", "RWO", "Capacity:", "1Gi",
		"Term 0:", "metadata.name in [node1]", "LocalVolume", "/data/pv-1")
	r = mustOK(t, e.run("describe", "pvc", "data"))
	assertContains(t, "describe pvc", r.out, "Namespace:", "default", "Status:", "Used By:", "user", "VolumeMode:", "Filesystem")
	r = mustOK(t, e.run("describe", "storageclass", "local-path"))
	assertContains(t, "describe storageclass", r.out, "IsDefaultClass:", "Yes", "Provisioner:", "tugboat.io/local-path", "WaitForFirstConsumer")
	mustCreate(t, e.c, &v1.DaemonSet{Metadata: &v1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: &v1.DaemonSetSpec{Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "agent", Image: "agent:1"}}}}}})
	r = mustOK(t, e.run("describe", "ds", "agent"))
	assertContains(t, "describe ds", r.out, "Selector:", "app=agent", "agent:1")
}

// TestDescribePodSchedulingConstraints: a pod from the Kubernetes
// documentation's examples (anti-affinity, preferred node affinity, two
// spread constraints) is applied as YAML and described as kubectl does.
func TestDescribePodSchedulingConstraints(t *testing.T) {
	e := newEnv(t)
	f := writeFile(t, t.TempDir(), "pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: spread
  labels:
    app: web
spec:
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference:
          matchExpressions:
          - key: another-node-label-key
            operator: In
            values:
            - another-node-label-value
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchExpressions:
          - key: app
            operator: In
            values:
            - web
        topologyKey: kubernetes.io/hostname
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector:
      matchLabels:
        app: web
  - maxSkew: 2
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        app: web
  containers:
  - name: c
    image: busybox:1
`)
	mustOK(t, e.run("apply", "-f", f))
	r := mustOK(t, e.run("describe", "pod", "spread"))
	assertContains(t, "describe pod", r.out,
		"Topology Spread Constraints: kubernetes.io/hostname:ScheduleAnyway when max skew 2 is exceeded for selector app=web\n"+
			" topology.kubernetes.io/zone:DoNotSchedule when max skew 1 is exceeded for selector app=web\n")
	bad := writeFile(t, t.TempDir(), "bad.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels:
            app: web
  containers:
  - name: c
    image: busybox:1
`)
	mustFail(t, e.run("apply", "-f", bad), "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty")
}

// TestDescribeServiceAccountPullSecrets: kubectl's "Image pull secrets:"
// lines, one secret a line, "(not found)" after a missing one.
func TestDescribeServiceAccountPullSecrets(t *testing.T) {
	e := newEnv(t)
	mustOK(t, e.run("create", "secret", "docker-registry", "regcred", "--docker-server=reg.local:5000", "--docker-username=u", "--docker-password=p"))
	mustCreate(t, e.c, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "builder", Namespace: "default"},
		ImagePullSecrets: []*v1.LocalObjectReference{{Name: "regcred"}, {Name: "gone"}}})
	r := mustOK(t, e.run("describe", "serviceaccount", "builder"))
	assertContains(t, "describe serviceaccount", r.out, "Image pull secrets: regcred\n gone (not found)\nMountable secrets: <none>\n")
	r = mustOK(t, e.run("describe", "serviceaccount", "default"))
	assertContains(t, "describe default serviceaccount", r.out, "Image pull secrets: <none>\n")
}
