package tugctl

import (
	"context"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// tugctl create token prints a service account token that authenticates
// as the account, bound tokens end with their object, and bad flags get
// kubectl's texts before anything is asked of the server.
func TestCreateToken(t *testing.T) {
	e := newSecureEnv(t)
	mustOK(t, e.run("create", "namespace", "ci"))
	mustOK(t, e.run("create", "serviceaccount", "builder", "-n", "ci"))
	tok := strings.TrimSpace(mustOK(t, e.run("create", "token", "builder", "-n", "ci", "--duration=20m", "--audience", "https://kubernetes.default.svc.cluster.local")).out)
	useToken := func(name, token string) {
		mustOK(t, e.run("config", "set-credentials", name, "--token", token))
		mustOK(t, e.run("config", "set-context", name, "--cluster", "test", "--user", name))
	}
	useToken("builder", tok)
	r := mustOK(t, e.run("--context", "builder", "auth", "whoami"))
	if got := row(t, r.out, "Username"); got[1] != "system:serviceaccount:ci:builder" {
		t.Errorf("the token's whoami:\n%s", r.out)
	}
	if r := e.run("--context", "builder", "get", "pods", "-n", "ci"); r.code == 0 || !strings.Contains(r.err, "system:serviceaccount:ci:builder") {
		t.Errorf("the account without a role: %v", r)
	}
	// -o yaml prints the TokenRequest with its expiration.
	r = mustOK(t, e.run("create", "token", "builder", "-n", "ci", "-o", "yaml"))
	for _, want := range []string{"apiVersion: authentication.k8s.io/v1", "kind: TokenRequest", "expirationSeconds: 3600", "expirationTimestamp:", "token: ey"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("-o yaml: no %q in\n%s", want, r.out)
		}
	}

	// Bound to a Secret: deleting it ends the token.
	mustOK(t, e.run("create", "secret", "generic", "builder-key", "-n", "ci", "--from-literal=k=v"))
	bound := strings.TrimSpace(mustOK(t, e.run("create", "token", "builder", "-n", "ci", "--bound-object-kind=Secret", "--bound-object-name=builder-key")).out)
	useToken("bound", bound)
	mustOK(t, e.run("--context", "bound", "auth", "whoami"))
	if _, err := client.For[*v1.Secret](e.c).Delete(context.Background(), "ci", "builder-key", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mustFail(t, e.run("--context", "bound", "auth", "whoami"), `service account token has been invalidated: secrets "builder-key" not found`)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration=-1s"}, "--duration must be greater than or equal to 0"},
		{[]string{"--duration=1500ms"}, "--duration cannot be expressed in units less than seconds"},
		{[]string{"--audience="}, "--audience must not be an empty string"},
		{[]string{"--bound-object-name=x"}, "--bound-object-name can only be set if --bound-object-kind is provided"},
		{[]string{"--bound-object-uid=x"}, "--bound-object-uid can only be set if --bound-object-kind is provided"},
		{[]string{"--bound-object-kind=Deployment", "--bound-object-name=x"}, "supported --bound-object-kind values are Node, Pod, Secret"},
		{[]string{"--bound-object-kind=Pod"}, "--bound-object-name is required if --bound-object-kind is provided"},
		{[]string{"--duration=5m"}, `failed to create token: TokenRequest.authentication.k8s.io "builder" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes`},
		{[]string{"--bound-object-kind=Pod", "--bound-object-name=ghost"}, `failed to create token: pods "ghost" not found`},
	} {
		mustFail(t, e.run(append([]string{"create", "token", "builder", "-n", "ci"}, c.args...)...), c.want)
	}
	mustFail(t, e.run("create", "token", "-n", "ci"), "SERVICE_ACCOUNT_NAME")
}
