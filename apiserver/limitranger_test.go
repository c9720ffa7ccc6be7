package apiserver_test

import (
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// decodeOne decodes one Kubernetes YAML document as tugctl apply does.
func decodeOne[T v1.Object](t *testing.T, doc string) T {
	t.Helper()
	objs, err := manifest.Decode("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return objs[0].Object.(T)
}

// A LimitRange from the Kubernetes docs gives containers their default
// requests and limits (with the limit-ranger annotation), and pods and
// containers out of its min/max/ratio are refused with Kubernetes' texts;
// claims are bounded by the PersistentVolumeClaim item; bad ranges are
// refused naming the field, and nothing is stored.
func TestLimitRanger(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	lrs := client.For[*v1.LimitRange](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	lr := decodeOne[*v1.LimitRange](t, `
apiVersion: v1
kind: LimitRange
metadata:
  name: cpu-resource-constraint
spec:
  limits:
  - type: Container
    default:
      cpu: 500m
    defaultRequest:
      cpu: 500m
    max:
      cpu: "1"
    min:
      cpu: 100m
    maxLimitRequestRatio:
      memory: "2"
  - type: Pod
    max:
      memory: 1Gi
  - type: PersistentVolumeClaim
    max:
      storage: 2Gi
    min:
      storage: 1Gi
`)
	got, err := lrs.Create(ctx, lr)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Spec.Limits[0]; d.Default["cpu"] != "500m" || d.DefaultRequest["cpu"] != "500m" {
		t.Fatalf("container item: %v", d)
	}

	p := newPod("defaults", nil)
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Requests: map[string]string{"memory": "100Mi"}, Limits: map[string]string{"memory": "150Mi"}}
	out, err := pods.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Spec.Containers[0].Resources
	if r.Requests["cpu"] != "500m" || r.Limits["cpu"] != "500m" || r.Requests["memory"] != "100Mi" {
		t.Errorf("defaults not applied: %v", r)
	}
	if a := out.Metadata.Annotations["kubernetes.io/limit-ranger"]; a != "LimitRanger plugin set: cpu request for container c; cpu limit for container c" {
		t.Errorf("annotation %q", a)
	}

	withResources := func(name string, req, lim map[string]string) *v1.Pod {
		p := newPod(name, nil)
		p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Requests: req, Limits: lim}
		return p
	}
	for _, tc := range []struct {
		pod  *v1.Pod
		want string
	}{
		{withResources("too-big", map[string]string{"memory": "1Gi"}, map[string]string{"cpu": "1500m", "memory": "1Gi"}), `pods "too-big" is forbidden: maximum cpu usage per Container is 1, but limit is 1500m`},
		{withResources("too-small", map[string]string{"cpu": "50m", "memory": "1Gi"}, map[string]string{"memory": "1Gi"}), `pods "too-small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m`},
		{withResources("bursty", map[string]string{"memory": "100Mi"}, map[string]string{"memory": "300Mi"}), `memory max limit to request ratio per Container is 2, but provided ratio is 3.000000`},
		{withResources("no-request", nil, nil), `memory max limit to request ratio per Container is 2, but no request is specified or request is 0`},
		{withResources("pod-max", map[string]string{"memory": "600Mi"}, map[string]string{"memory": "1100Mi"}), `maximum memory usage per Pod is 1Gi, but limit is 1153433600`},
	} {
		if _, err := pods.Create(ctx, tc.pod); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.pod.Metadata.Name, err, tc.want)
		}
		if _, err := pods.Get(ctx, "default", tc.pod.Metadata.Name); err == nil {
			t.Errorf("%s stored", tc.pod.Metadata.Name)
		}
	}

	claims := client.For[*v1.PersistentVolumeClaim](s.Client)
	claim := func(name, size string) *v1.PersistentVolumeClaim {
		return &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: name}, Spec: &v1.PersistentVolumeClaimSpec{
			AccessModes: []string{"ReadWriteOnce"}, Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": size}}}}
	}
	if _, err := claims.Create(ctx, claim("small", "500Mi")); err == nil || !strings.Contains(err.Error(), `persistentvolumeclaims "small" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi`) {
		t.Errorf("small claim: %v", err)
	}
	if _, err := claims.Create(ctx, claim("fits", "1Gi")); err != nil {
		t.Errorf("claim within range: %v", err)
	}

	for _, tc := range []struct {
		name, doc, want string
	}{
		{"min-over-max", "- type: Container\n    min: {cpu: '2'}\n    max: {cpu: '1'}", `spec.limits[0].min.cpu: min value 2 is greater than max value 1`},
		{"default-over-max", "- type: Container\n    default: {memory: 2Gi}\n    max: {memory: 1Gi}", `spec.limits[0].default.memory: default value 2Gi is greater than max value 1Gi`},
		{"request-over-limit", "- type: Container\n    default: {cpu: 100m}\n    defaultRequest: {cpu: 200m}", `spec.limits[0].defaultRequest.cpu: default request value 200m is greater than default limit value 100m`},
		{"ratio", "- type: Container\n    maxLimitRequestRatio: {cpu: 500m}", `spec.limits[0].maxLimitRequestRatio.cpu: ratio 500m is less than 1`},
		{"pod-default", "- type: Pod\n    default: {cpu: 100m}", "spec.limits[0].default: may not be specified when `type` is 'Pod'"},
		{"bad-type", "- type: Node\n    max: {cpu: '1'}", `spec.limits[0].type: "Node" is not one of`},
		{"bad-resource", "- type: Container\n    max: {gpu: '1'}", `spec.limits[0].max.gpu: unknown resource "gpu"`},
		{"bad-quantity", "- type: Container\n    max: {cpu: lots}", `spec.limits[0].max.cpu: quantity "lots" is not valid`},
		{"claim-no-storage", "- type: PersistentVolumeClaim\n    min: {}", `either minimum or maximum storage value is required`},
		{"duplicate", "- type: Pod\n    max: {cpu: '1'}\n  - type: Pod\n    max: {cpu: '2'}", `spec.limits[1].type: Duplicate value: "Pod"`},
	} {
		bad := decodeOne[*v1.LimitRange](t, "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: "+tc.name+"\nspec:\n  limits:\n  "+tc.doc+"\n")
		if _, err := lrs.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if _, err := lrs.Get(ctx, "default", tc.name); err == nil {
			t.Errorf("%s stored", tc.name)
		}
	}
}
