package tugctl

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// TestGetComponentStatuses: tugctl get cs prints the apiserver's
// computed status as kubectl does (NAME STATUS MESSAGE ERROR); one by
// name as YAML or JSON; an unknown name is NotFound; tugctl cluster status
// shows every apiserver, etcd member and leader in detail and exits 1
// while a component is unhealthy (no scheduler runs here).
func TestGetComponentStatuses(t *testing.T) {
	e := newEnv(t)
	now := timestamppb.Now()
	mustCreate(t, e.c, &v1.Lease{Metadata: &v1.ObjectMeta{Name: "controller-manager", Namespace: "kube-system"},
		Spec: &v1.LeaseSpec{HolderIdentity: "cm-a_7", LeaseDurationSeconds: 600, AcquireTime: now, RenewTime: now}})

	var r result
	// The apiserver's identity Lease is written once it runs.
	wait.Eventually(t, 30*time.Second, "this apiserver in get cs", func() error {
		r = e.run("get", "cs")
		if !regexp.MustCompile(`(?m)^apiserver-[0-9a-f]{16}\s+Healthy\s+ok, 127\.0\.0\.1:\d+\s*$`).MatchString(r.out) {
			return fmt.Errorf("get cs: %v", r)
		}
		return nil
	})
	assertContains(t, "get cs", r.out, "NAME STATUS MESSAGE ERROR\n",
		"\nscheduler Unhealthy no Lease: no scheduler has run\n",
		"\ncontroller-manager Healthy ok, leader cm-a_7 \n",
		"\netcd-0 Healthy ok, member ")

	r = mustOK(t, e.run("get", "componentstatus", "controller-manager", "-o", "json"))
	var cs struct {
		Kind       string
		Metadata   struct{ Name string }
		Conditions []struct{ Type, Status, Message string }
	}
	if err := json.Unmarshal([]byte(r.out), &cs); err != nil || cs.Kind != "ComponentStatus" || cs.Metadata.Name != "controller-manager" ||
		len(cs.Conditions) != 1 || cs.Conditions[0].Type != "Healthy" || cs.Conditions[0].Status != "True" {
		t.Errorf("get componentstatus controller-manager -o json: %v %+v\n%s", err, cs, r.out)
	}
	r = mustOK(t, e.run("get", "cs/scheduler", "-o", "yaml"))
	assertContains(t, "get cs/scheduler -o yaml", r.out, "kind: ComponentStatus", "- error: 'no Lease: no scheduler has run'", "status: \"False\"", "type: Healthy")
	mustFail(t, e.run("get", "cs", "nope"), `componentstatuses "nope" not found`)
	mustFail(t, e.run("get", "cs", "-w"), "cannot be watched")

	r = e.run("cluster", "status")
	if r.code != 1 {
		t.Errorf("cluster status with no scheduler: exit %d, want 1: %v", r.code, r)
	}
	assertContains(t, "cluster status", r.out, "APISERVERS (answered by apiserver-",
		"\nNAME ADDRESS HEALTHY RENEWED ERROR\napiserver-",
		"\nETCD MEMBERS\nNAME ID CLIENT URL LEADER RAFT INDEX RAFT TERM DB SIZE VERSION HEALTHY ERROR\n",
		" yes ", "\nLEADERS\nCOMPONENT LEASE HOLDER RENEWED HEALTHY ERROR\n",
		"\nscheduler kube-system/scheduler <none> no no Lease: no scheduler has run\n",
		"\ncontroller-manager kube-system/controller-manager cm-a_7 ")
	assertContains(t, "cluster status stderr", r.err, "unhealthy: scheduler")
	t.Logf("tugctl get cs:\n%s\ntugctl cluster status:\n%s", mustOK(t, e.run("get", "cs")).out, r.out)
}
