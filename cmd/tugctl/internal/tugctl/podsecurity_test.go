package tugctl

import (
	"strings"
	"testing"
)

// The apiserver's Pod Security warnings are printed on stderr, as kubectl
// prints them, and an enforce refusal is the error.
func TestPodSecurityWarningsPrinted(t *testing.T) {
	e := newEnv(t)
	mustOK(t, e.runIn(`apiVersion: v1
kind: Namespace
metadata:
  name: dev
  labels:
    pod-security.kubernetes.io/enforce: baseline
    pod-security.kubernetes.io/warn: restricted
`, "apply", "-f", "-"))
	r := mustOK(t, e.runIn(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: dev}
spec:
  containers:
  - name: web
    image: nginx
`, "apply", "-f", "-"))
	want := `Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "web" must set securityContext.allowPrivilegeEscalation=false)`
	if !strings.Contains(r.err, want) || r.out != "pod/web created\n" {
		t.Errorf("%s\nwant on stderr: %s", r, want)
	}
	r = e.runIn(`apiVersion: v1
kind: Pod
metadata: {name: root, namespace: dev}
spec: {hostNetwork: true, containers: [{name: c, image: nginx}]}
`, "create", "-f", "-")
	if r.code == 0 || !strings.Contains(r.err, `violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`) {
		t.Errorf("hostNetwork in a baseline namespace: %s", r)
	}
}
