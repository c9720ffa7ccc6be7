package apiserver_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// Every namespace has a "default" ServiceAccount (made with it, made again
// if deleted); pods get it when they name none, and a pod naming a missing
// account is refused.
func TestServiceAccountAdmission(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	sas := client.For[*v1.ServiceAccount](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	if _, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "sa-team"}}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"default", "kube-system", "sa-team"} {
		if _, err := sas.Get(ctx, ns, "default"); err != nil {
			t.Errorf("%s has no default service account: %v", ns, err)
		}
	}
	p := newPod("web", nil)
	p.Metadata.Namespace = "sa-team"
	got, err := pods.Create(ctx, p)
	if err != nil || got.Spec.GetServiceAccountName() != "default" {
		t.Fatalf("pod without an account: %v, %v", got.GetSpec().GetServiceAccountName(), err)
	}
	p = newPod("robot", nil)
	p.Metadata.Namespace = "sa-team"
	p.Spec.ServiceAccountName = "robot"
	if _, err := pods.Create(ctx, p); err == nil || !strings.Contains(err.Error(), `pods "robot" is forbidden: error looking up service account sa-team/robot: serviceaccount "robot" not found`) {
		t.Errorf("missing account: %v", err)
	}
	if _, err := sas.Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "robot", Namespace: "sa-team"}, AutomountServiceAccountToken: proto.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, p); err != nil {
		t.Errorf("pod of an existing account: %v", err)
	}
	old, _ := sas.Get(ctx, "sa-team", "default")
	if _, err := sas.Delete(ctx, "sa-team", "default", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if again, err := sas.Get(ctx, "sa-team", "default"); err != nil || again.Metadata.Uid == old.GetMetadata().GetUid() {
		t.Errorf("default account not made again after a delete: %v %v", again, err)
	}
	// Bad input names the field; nothing stored.
	p = newPod("mount", nil)
	p.Metadata.Namespace = "sa-team"
	p.Spec.AutomountServiceAccountToken = proto.Bool(true)
	if _, err := pods.Create(ctx, p); err == nil || !strings.Contains(err.Error(), "spec.automountServiceAccountToken: true is not supported") {
		t.Errorf("automount true: %v", err)
	}
	if _, err := sas.Create(ctx, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "Bad_Name", Namespace: "sa-team"}}); err == nil || !strings.Contains(err.Error(), "metadata.name") {
		t.Errorf("bad name: %v", err)
	}
}
