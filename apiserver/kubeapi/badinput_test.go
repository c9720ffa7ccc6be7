package kubeapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

type status struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Code    int    `json:"code"`
	Details struct {
		Name, Group, Kind string
		Causes            []struct {
			Reason, Message, Field string
		} `json:"causes"`
	} `json:"details"`
}

func parseStatus(t *testing.T, body string) status {
	t.Helper()
	var st status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status: %v\n%s", err, body)
	}
	return st
}

// testBadInput: every kind of bad request gets a Status naming the cause,
// with Kubernetes' code, and nothing is stored.
func testBadInput(t *testing.T, e *env) {
	const cms = "/api/v1/namespaces/default/configmaps"
	cases := []struct {
		name, method, path, ctype, body string
		code                            int
		reason, mention                 string
	}{
		{"invalid JSON", "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad1"}`, 400, "BadRequest", "invalid JSON"},
		{"unknown field", "POST", cms + "?fieldValidation=Strict", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad2"},"datta":{"a":"b"}}`, 422, "Invalid", "datta"},
		{"wrong apiVersion", "POST", cms, "application/json", `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"bad3"}}`, 422, "Invalid", "apiVersion"},
		{"wrong kind for the URL", "POST", cms, "application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad4"}}`, 400, "BadRequest", "Secret"},
		{"invalid object", "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}`, 422, "Invalid", "metadata.name"},
		{"body over 3 MiB", "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad5"},"data":{"a":"` + strings.Repeat("x", 3<<20) + `"}}`, 413, "RequestEntityTooLarge", "limit"},
		{"bad label selector", "GET", cms + "?labelSelector=a%20in%20(", "", "", 422, "Invalid", "labelSelector"},
		{"bad field selector", "GET", cms + "?fieldSelector=spec.nope=1", "", "", 422, "Invalid", "fieldSelector"},
		{"bad patch", "PATCH", "/apis/apps/v1/namespaces/default/deployments/nginx-deployment", "application/json-patch+json", `[{"op":"replace","path":"/spec/nope","value":1}]`, 422, "Invalid", "spec.nope"},
		{"patch that does not apply", "PATCH", "/apis/apps/v1/namespaces/default/deployments/nginx-deployment", "application/json-patch+json", `[{"op":"test","path":"/spec/replicas","value":99}]`, 422, "Invalid", "patch"},
		{"patch that sets an unknown field", "PATCH", "/apis/apps/v1/namespaces/default/deployments/nginx-deployment", "application/merge-patch+json", `{"spec":{"replicaz":1}}`, 422, "Invalid", "spec.replicaz"},
		{"unsupported patch type", "PATCH", "/apis/apps/v1/namespaces/default/deployments/nginx-deployment", "text/plain", `{}`, 415, "UnsupportedMediaType", "content type"},
		{"not found", "GET", cms + "/nope", "", "", 404, "NotFound", "nope"},
		{"already exists", "POST", "/api/v1/namespaces", "application/json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`, 409, "AlreadyExists", "default"},
		{"stale update", "PUT", cms + "/settings", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","resourceVersion":"1"},"data":{"mode":"slow"}}`, 409, "Conflict", "modified"},
		{"unknown resource", "GET", "/api/v1/namespaces/default/widgets", "", "", 404, "NotFound", "could not find"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := e.do(t, c.method, c.path, c.ctype, []byte(c.body))
			st := parseStatus(t, body)
			if code != c.code || st.Code != c.code || st.Reason != c.reason || st.Status != "Failure" {
				t.Fatalf("got %d %s (status code %d), want %d %s:\n%s", code, st.Reason, st.Code, c.code, c.reason, body)
			}
			text := st.Message
			for _, cause := range st.Details.Causes {
				text += " " + cause.Field + " " + cause.Message
			}
			if !strings.Contains(text, c.mention) {
				t.Fatalf("the Status does not name %q:\n%s", c.mention, body)
			}
		})
	}
	// NotFound, AlreadyExists and Conflict in Kubernetes' words (kubectl
	// prints the message after "Error from server (NotFound): "), with the
	// object in details.
	words := []struct {
		method, path, body string
		message            string
		name, group, kind  string
	}{
		{"GET", "/apis/apps/v1/namespaces/default/deployments/nope", "", `deployments.apps "nope" not found`, "nope", "apps", "deployments"},
		{"GET", cms + "/nope", "", `configmaps "nope" not found`, "nope", "", "configmaps"},
		{"DELETE", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/nope", "", `roles.rbac.authorization.k8s.io "nope" not found`, "nope", "rbac.authorization.k8s.io", "roles"},
		{"POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`, `namespaces "default" already exists`, "default", "", "namespaces"},
		{"PUT", cms + "/settings", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","resourceVersion":"1"},"data":{"mode":"slow"}}`,
			`Operation cannot be fulfilled on configmaps "settings": the object has been modified; please apply your changes to the latest version and try again`, "settings", "", "configmaps"},
	}
	for _, c := range words {
		ctype := ""
		if c.body != "" {
			ctype = "application/json"
		}
		_, body := e.do(t, c.method, c.path, ctype, []byte(c.body))
		st := parseStatus(t, body)
		if st.Message != c.message || st.Details.Name != c.name || st.Details.Group != c.group || st.Details.Kind != c.kind {
			t.Errorf("%s %s: message %q, details %s/%s/%s; want %q, %s/%s/%s", c.method, c.path, st.Message,
				st.Details.Group, st.Details.Kind, st.Details.Name, c.message, c.group, c.kind, c.name)
		}
	}
	// The invalid field is a cause of its own.
	_, body := e.do(t, "POST", cms, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad6"},"datta":{"a":"b"}}`))
	if st := parseStatus(t, body); len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "datta" {
		t.Fatalf("details.causes does not name the field:\n%s", body)
	}
	ctx := context.Background()
	for _, name := range []string{"bad1", "bad2", "bad3", "bad4", "Bad_Name", "bad5", "bad6"} {
		if _, err := client.For[*v1.ConfigMap](e.srv.Client).Get(ctx, "default", name); !apierrors.IsNotFound(err) {
			t.Errorf("configmap %s was stored (%v)", name, err)
		}
	}
	if cm, _ := client.For[*v1.ConfigMap](e.srv.Client).Get(ctx, "default", "settings"); cm.Data["mode"] != "fast" {
		t.Errorf("the stale update changed the configmap: %v", cm.Data)
	}
	if d := e.deployment(t, "nginx-deployment"); d.Spec.GetReplicas() != 5 {
		t.Errorf("a bad patch changed the deployment: replicas %d", d.Spec.GetReplicas())
	}
	// A WebSocket from a web page (it carries Origin) may not exec.
	oreq, _ := http.NewRequest("GET", e.url+"/api/v1/namespaces/default/pods/solo/exec?command=sh", nil)
	oreq.Header.Set("Origin", "https://evil.example")
	oresp, err := e.http.Do(oreq)
	if err != nil {
		t.Fatal(err)
	}
	oresp.Body.Close()
	if oresp.StatusCode != 403 {
		t.Fatalf("exec with an Origin header: %d, want 403", oresp.StatusCode)
	}
	// fieldValidation=Ignore drops the unknown field with a warning.
	req, _ := http.NewRequest("POST", e.url+cms+"?fieldValidation=Ignore", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ignored"},"datta":{"a":"b"},"data":{"k":"v"}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(resp.Header.Get("Warning"), "datta") {
		t.Fatalf("fieldValidation=Ignore: %d, Warning %q", resp.StatusCode, resp.Header.Get("Warning"))
	}
}

// testWatchExpired: a watch from a compacted version ends with an ERROR
// event carrying 410 Expired, which makes clients re-list.
func testWatchExpired(t *testing.T, e *env) {
	ctx := context.Background()
	cm := client.For[*v1.ConfigMap](e.srv.Client)
	first, err := cm.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "old", Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		first.Data = map[string]string{"i": strings.Repeat("x", i)}
		if first, err = cm.Update(ctx, first); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.srv.Compact(ctx, first.Metadata.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	_, body := e.do(t, "GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=2&timeoutSeconds=5", "", nil)
	var ev struct {
		Type   string `json:"type"`
		Object status `json:"object"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(body, "\n", 2)[0]), &ev); err != nil || ev.Type != "ERROR" || ev.Object.Code != 410 || ev.Object.Reason != "Expired" {
		t.Fatalf("watch from a compacted version: %v\n%s", err, body)
	}
}
