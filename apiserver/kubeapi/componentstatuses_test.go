package kubeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// testKubectlComponentStatuses: kubectl get cs lists the computed
// ComponentStatus items as kube-apiserver's table (NAME STATUS MESSAGE
// ERROR): the embedded etcd member and this apiserver healthy, the
// controller-manager healthy by its Lease, the
// scheduler (none runs) unhealthy saying why; get of one by name as JSON
// with its Healthy condition; an unknown name NotFound; a viewer, whose
// role does not grant componentstatuses, Forbidden; writes refused.
func testKubectlComponentStatuses(t *testing.T, e *env) {
	// The test's controller-manager runs without leader election: a Lease
	// as a leading one renews it.
	leases := client.For[*v1.Lease](e.srv.Client)
	now := timestamppb.Now()
	if _, err := leases.Create(context.Background(), &v1.Lease{Metadata: &v1.ObjectMeta{Name: "controller-manager", Namespace: "kube-system"},
		Spec: &v1.LeaseSpec{HolderIdentity: "kubeapi-test", LeaseDurationSeconds: 600, AcquireTime: now, RenewTime: now}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = leases.Delete(context.Background(), "kube-system", "controller-manager", client.DeleteOptions{})
	})
	var out string
	eventually(t, "kubectl get cs with the controller-manager leading", func() error {
		var err error
		out, err = e.kubectlAs(t, e.admin, "", "get", "cs")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !regexp.MustCompile(`(?m)^controller-manager\s+Healthy\s+ok, leader kubeapi-test`).MatchString(out) {
			return fmt.Errorf("output:\n%s", out)
		}
		return nil
	})
	for _, want := range []string{
		`(?m)^NAME\s+STATUS\s+MESSAGE\s+ERROR\s*$`,
		`(?m)^etcd-0\s+Healthy\s+ok, member \S+, raft index \d+, db [0-9.]+ [KM]iB, leader\s*$`,
		`(?m)^apiserver-[0-9a-f]{16}\s+Healthy\s+ok, 127\.0\.0\.1:\d+\s*$`,
		`(?m)^scheduler\s+Unhealthy\s+no Lease: no scheduler has run\s*$`,
		`Warning: v1 ComponentStatus is deprecated in v1.19\+`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("kubectl get cs: want %s in:\n%s", want, out)
		}
	}

	js := e.kubectl(t, "get", "componentstatus", "etcd-0", "-o", "json")
	if i := strings.Index(js, "{"); i > 0 {
		js = js[i:] // after kubectl's Warning line (the output is combined)
	}
	var cs struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Conditions []struct {
			Type, Status, Message, Error string
		} `json:"conditions"`
	}
	if err := json.Unmarshal([]byte(js), &cs); err != nil {
		t.Fatalf("kubectl get componentstatus etcd-0 -o json: %v\n%s", err, js)
	}
	if cs.Kind != "ComponentStatus" || cs.APIVersion != "v1" || cs.Metadata.Name != "etcd-0" || len(cs.Conditions) != 1 ||
		cs.Conditions[0].Type != "Healthy" || cs.Conditions[0].Status != "True" || cs.Conditions[0].Error != "" {
		t.Errorf("etcd-0 as JSON: %+v", cs)
	}

	if out, err := e.kubectlAs(t, e.admin, "", "get", "cs", "nope"); err == nil || !strings.Contains(out, `componentstatuses "nope" not found`) {
		t.Errorf("kubectl get cs nope: %v\n%s", err, out)
	}
	if out, err := e.kubectlAs(t, e.view, "", "get", "cs"); err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, "componentstatuses") {
		t.Errorf("kubectl get cs as the viewer: %v\n%s", err, out)
	}
	if code, body := e.do(t, http.MethodPost, "/api/v1/componentstatuses", "application/json", []byte(`{"metadata":{"name":"x"}}`)); code != http.StatusMethodNotAllowed {
		t.Errorf("POST componentstatuses: %d %s", code, body)
	}
}
