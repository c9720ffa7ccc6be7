package kubeapi_test

import (
	"regexp"
	"strings"
	"testing"
)

// The real kubectl applies a LimitRange and a ResourceQuota, lists them
// with the server's tables, describes the quota (Resource/Used/Hard, as
// kubectl reads the object itself), and sees a pod over the quota refused
// with Kubernetes' text.
func TestKubectlQuotaAndLimits(t *testing.T) {
	e := newEnv(t)
	const docs = `apiVersion: v1
kind: LimitRange
metadata:
  name: cpu-defaults
spec:
  limits:
  - type: Container
    defaultRequest:
      cpu: 250m
    default:
      cpu: 500m
    max:
      cpu: "1"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
spec:
  hard:
    pods: "1"
    requests.cpu: "1"
    limits.cpu: "2"
`
	if out, err := e.kubectlAs(t, e.admin, docs, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if out := e.kubectl(t, "get", "limitrange"); !regexp.MustCompile(`NAME\s+CREATED AT\ncpu-defaults\s+\d{4}-\d\d-\d\dT`).MatchString(out) {
		t.Errorf("get limitrange:\n%s", out)
	}
	if out := e.kubectl(t, "get", "quota"); !strings.Contains(out, "REQUEST") || !strings.Contains(out, "pods: 0/1, requests.cpu: 0/1") || !strings.Contains(out, "limits.cpu: 0/2") {
		t.Errorf("get quota:\n%s", out)
	}
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: app
    image: busybox
`
	if out, err := e.kubectlAs(t, e.admin, strings.ReplaceAll(pod, "%s", "first"), "create", "-f", "-"); err != nil {
		t.Fatalf("first pod: %v\n%s", err, out)
	}
	out := e.kubectl(t, "describe", "quota", "compute")
	for _, re := range []string{`Name:\s+compute`, `Resource\s+Used\s+Hard`, `limits\.cpu\s+500m\s+2`, `pods\s+1\s+1`, `requests\.cpu\s+250m\s+1`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("describe quota: no %q in\n%s", re, out)
		}
	}
	if out := e.kubectl(t, "describe", "limitrange", "cpu-defaults"); !regexp.MustCompile(`Container\s+cpu\s+-\s+1\s+250m\s+500m\s+-`).MatchString(out) {
		t.Errorf("describe limitrange:\n%s", out)
	}
	out, err := e.kubectlAs(t, e.admin, strings.ReplaceAll(pod, "%s", "second"), "create", "-f", "-")
	if err == nil || !strings.Contains(out, `pods "second" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1`) {
		t.Errorf("second pod: %v\n%s", err, out)
	}
}
