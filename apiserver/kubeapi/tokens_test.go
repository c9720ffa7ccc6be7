package kubeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// kubectl create token through the Kubernetes door: the printed token
// authenticates kubectl --token as the account, which RBAC then governs;
// the TokenRequest answer has Kubernetes' shape; a too-short duration is
// refused with Kubernetes' text; the issuer's discovery documents serve the
// key that verifies it.
func testKubectlCreateToken(t *testing.T, e *env) {
	e.kubectl(t, "create", "namespace", "tok")
	eventually(t, "the default service account of tok", func() error {
		_, err := client.For[*v1.ServiceAccount](e.srv.Client).Get(context.Background(), "tok", "default")
		return err
	})
	tok := strings.TrimSpace(e.kubectl(t, "create", "token", "default", "-n", "tok"))
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("kubectl create token printed %q, not a JWT", tok)
	}
	// A kubeconfig without credentials; the token comes from --token.
	bare := e.kubeconfig(t, "nobody", "{}")
	out, err := e.kubectlAs(t, bare, "", "--token="+tok, "auth", "whoami")
	if err != nil || !strings.Contains(out, "system:serviceaccount:tok:default") || !strings.Contains(out, "system:serviceaccounts:tok") {
		t.Fatalf("kubectl --token auth whoami: %v\n%s", err, out)
	}
	out, err = e.kubectlAs(t, bare, "", "--token="+tok, "get", "pods", "-n", "tok")
	if want := `Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:tok:default" cannot list resource "pods" in API group "" in the namespace "tok"`; err == nil || !strings.Contains(out, want) {
		t.Fatalf("kubectl --token get pods without a role: %v, want %q in\n%s", err, want, out)
	}
	e.kubectl(t, "create", "rolebinding", "default-view", "--clusterrole=view", "--serviceaccount=tok:default", "-n", "tok")
	eventually(t, "the account's binding to reach the authorizer", func() error {
		out, err := e.kubectlAs(t, bare, "", "--token="+tok, "get", "pods", "-n", "tok")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	// A wrong token is 401.
	if out, err := e.kubectlAs(t, bare, "", "--token="+tok+"x", "get", "pods", "-n", "tok"); err == nil || !strings.Contains(out, "You must be logged in to the server (invalid bearer token") {
		t.Errorf("a bad signature: %v\n%s", err, out)
	}
	out, err = e.kubectlAs(t, e.admin, "", "create", "token", "default", "-n", "tok", "--duration=5m")
	if want := `TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes`; err == nil || !strings.Contains(out, want) {
		t.Errorf("--duration=5m: %v, want %q in\n%s", err, want, out)
	}

	// The answer, as kube-apiserver's.
	code, body := e.do(t, http.MethodPost, "/api/v1/namespaces/tok/serviceaccounts/default/token", "application/json",
		[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"creationTimestamp":null},"spec":{"audiences":["vault"],"expirationSeconds":7200,"boundObjectRef":null},"status":{"token":""}}`))
	var tr struct {
		APIVersion, Kind string
		Metadata         struct{ Name, Namespace string }
		Spec             struct {
			Audiences         []string
			ExpirationSeconds json.Number
		}
		Status struct {
			Token               string
			ExpirationTimestamp time.Time
		}
	}
	if err := json.Unmarshal([]byte(body), &tr); err != nil || code != http.StatusCreated {
		t.Fatalf("POST token: %d %v\n%s", code, err, body)
	}
	if tr.APIVersion != "authentication.k8s.io/v1" || tr.Kind != "TokenRequest" || tr.Metadata.Name != "default" || tr.Metadata.Namespace != "tok" ||
		strings.Join(tr.Spec.Audiences, ",") != "vault" || tr.Spec.ExpirationSeconds != "7200" || tr.Status.Token == "" ||
		tr.Status.ExpirationTimestamp.Sub(time.Now()) < 119*time.Minute {
		t.Errorf("TokenRequest answer:\n%s", body)
	}
	// An unknown field is refused, not dropped.
	if code, body := e.do(t, http.MethodPost, "/api/v1/namespaces/tok/serviceaccounts/default/token", "application/json",
		[]byte(`{"spec":{"expirationSecs":7200}}`)); code != http.StatusBadRequest || !strings.Contains(body, "expirationSecs") {
		t.Errorf("unknown field: %d %s", code, body)
	}
	// Discovery names the subresource.
	if code, body := e.do(t, http.MethodGet, "/api/v1", "", nil); code != http.StatusOK || !strings.Contains(body, `"name":"serviceaccounts/token"`) {
		t.Errorf("discovery of serviceaccounts/token: %d", code)
	}

	// Issuer discovery: the keys that verify the tokens.
	code, body = e.do(t, http.MethodGet, "/.well-known/openid-configuration", "", nil)
	if code != http.StatusOK || !strings.Contains(body, `"issuer":"https://kubernetes.default.svc.cluster.local"`) || !strings.Contains(body, `"jwks_uri":"https://kubernetes.default.svc.cluster.local/openid/v1/jwks"`) {
		t.Errorf("openid-configuration: %d %s", code, body)
	}
	code, body = e.do(t, http.MethodGet, "/openid/v1/jwks", "", nil)
	if code != http.StatusOK || !strings.Contains(body, `"kty":"EC"`) || !strings.Contains(body, `"alg":"ES256"`) {
		t.Errorf("jwks: %d %s", code, body)
	}
}
