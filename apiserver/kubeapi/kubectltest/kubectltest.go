// Package kubectltest runs the real kubectl in tests of the Kubernetes
// HTTP API: Path finds the binary (a missing one skips the test with the
// install hint on a developer's machine and fails it where CI=true), and
// Kubeconfig writes a kubeconfig for a test apiserver.
package kubectltest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Path is kubectl's path.
func Path(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err == nil {
		return p
	}
	msg := "kubectl not found: Debian machines of this kind have /usr/bin/kubectl; hack/install-deps.sh builds it from the Go module proxy"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Kubeconfig writes to path a kubeconfig for https://server with the CA
// file ca, user name user and its credentials: userYAML is the body of the
// user entry, e.g. "client-certificate: a.crt\nclient-key: a.key" or
// "token: T".
func Kubeconfig(t testing.TB, path, server, ca, user, userYAML string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tugboat
  cluster:
    server: https://%s
    certificate-authority: %s
users:
- name: %s
  user:
%scontexts:
- name: tugboat
  context:
    cluster: tugboat
    user: %s
    namespace: default
current-context: tugboat
`, server, ca, user, indent(userYAML), user)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func indent(s string) string {
	out := ""
	for _, l := range splitLines(s) {
		out += "    " + l + "\n"
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
