package kubeapi_test

import (
	"regexp"
	"strings"
	"testing"
)

// The real kubectl applies the DRA kinds (resource.k8s.io/v1) and a pod
// that uses a claim, finds them through discovery, lists them with the
// server's tables (a claim nothing allocated is pending), reads them back
// in Kubernetes' shape, and sees a bad claim refused naming the field.
func TestKubectlResourceClaims(t *testing.T) {
	e := newEnv(t)
	const docs = `apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: single-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: shared-gpu
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: 2
---
apiVersion: v1
kind: Pod
metadata:
  name: infer
spec:
  resourceClaims:
  - name: mine
    resourceClaimTemplateName: single-gpu
  - name: shared
    resourceClaimName: shared-gpu
  containers:
  - name: app
    image: busybox
    resources:
      claims:
      - name: mine
      - name: shared
        request: gpu
`
	if out, err := e.kubectlAs(t, e.admin, docs, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if out := e.kubectl(t, "get", "deviceclass"); !regexp.MustCompile(`NAME\s+AGE\ngpu\.example\.com\s+\d+s`).MatchString(out) {
		t.Errorf("get deviceclass:\n%s", out)
	}
	if out := e.kubectl(t, "get", "resourceclaim"); !regexp.MustCompile(`NAME\s+STATE\s+AGE\nshared-gpu\s+pending\s+\d+s`).MatchString(out) {
		t.Errorf("get resourceclaim:\n%s", out)
	}
	if out := e.kubectl(t, "get", "resourceclaimtemplates.resource.k8s.io"); !regexp.MustCompile(`NAME\s+AGE\nsingle-gpu\s+\d+s`).MatchString(out) {
		t.Errorf("get resourceclaimtemplates:\n%s", out)
	}
	if out := e.kubectl(t, "get", "resourceclaim", "shared-gpu", "-o", "jsonpath={.spec.devices.requests[0].exactly.allocationMode}/{.spec.devices.requests[0].exactly.count}"); out != "ExactCount/2" {
		t.Errorf("claim read back: %q", out)
	}
	if out := e.kubectl(t, "get", "pod", "infer", "-o", "jsonpath={.spec.resourceClaims[0].resourceClaimTemplateName} {.spec.containers[0].resources.claims[1].request}"); out != "single-gpu gpu" {
		t.Errorf("pod read back: %q", out)
	}
	const bad = `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: bad
spec:
  devices:
    requests:
    - name: gpu
`
	out, err := e.kubectlAs(t, e.admin, bad, "create", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required") {
		t.Errorf("bad claim: %v\n%s", err, out)
	}
}
