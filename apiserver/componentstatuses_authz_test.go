package apiserver_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// TestComponentStatusesVerbs: the whole cluster status is a list of
// componentstatuses and one component a get, as kube-apiserver authorizes
// kubectl get cs and kubectl get cs NAME. A user who may only list gets
// the whole status and is refused one component; a user who may get
// etcd-0 (resourceNames) gets that member alone and is refused the list
// and another name; an unknown name is NotFound.
func TestComponentStatusesVerbs(t *testing.T) {
	s := apiservertest.StartSecure(t, withTokens(t, "lister", "getter"))
	ctx := ctxT(t)
	for _, r := range []*v1.ClusterRole{
		{Metadata: &v1.ObjectMeta{Name: "cs-lister"}, Rules: []*v1.PolicyRule{rule([]string{""}, []string{"componentstatuses"}, []string{"list"})}},
		{Metadata: &v1.ObjectMeta{Name: "cs-getter"}, Rules: []*v1.PolicyRule{rule([]string{""}, []string{"componentstatuses"}, []string{"get"}, "etcd-0")}},
	} {
		if _, err := client.For[*v1.ClusterRole](s.Client).Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for user, role := range map[string]string{"lister": "cs-lister", "getter": "cs-getter"} {
		if _, err := client.For[*v1.ClusterRoleBinding](s.Client).Create(ctx, &v1.ClusterRoleBinding{Metadata: &v1.ObjectMeta{Name: user},
			Subjects: []*v1.RBACSubject{{Kind: "User", Name: user}},
			RoleRef:  &v1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}}); err != nil {
			t.Fatal(err)
		}
	}
	waitAllowed(t, s, "lister", "list", "componentstatuses", "", "")
	waitAllowed(t, s, "getter", "get", "componentstatuses", "", "etcd-0")

	lister := v1.NewClusterClient(tokenClient(t, s, "lister").Conn())
	st, err := lister.Status(ctx, &v1.ClusterStatusRequest{})
	if err != nil || len(st.EtcdMembers) != 1 || len(st.Apiservers) != 1 || len(st.Leaders) != 2 {
		t.Errorf("list as lister: %v, %v; want the whole status", st, err)
	}
	if _, err := lister.Status(ctx, &v1.ClusterStatusRequest{Name: "etcd-0"}); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `cannot get resource "componentstatuses"`) {
		t.Errorf("get etcd-0 as lister: %v, want PermissionDenied for get", err)
	}

	getter := v1.NewClusterClient(tokenClient(t, s, "getter").Conn())
	st, err = getter.Status(ctx, &v1.ClusterStatusRequest{Name: "etcd-0"})
	if err != nil || len(st.EtcdMembers) != 1 || len(st.Apiservers) != 0 || len(st.Leaders) != 0 {
		t.Errorf("get etcd-0 as getter: %v, %v; want that member alone", st, err)
	}
	if _, err := getter.Status(ctx, &v1.ClusterStatusRequest{}); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `cannot list resource "componentstatuses"`) {
		t.Errorf("list as getter: %v, want PermissionDenied for list", err)
	}
	if _, err := getter.Status(ctx, &v1.ClusterStatusRequest{Name: "scheduler"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("get scheduler as getter: %v, want PermissionDenied", err)
	}

	admin := v1.NewClusterClient(s.Client.Conn())
	if _, err := admin.Status(ctx, &v1.ClusterStatusRequest{Name: "nope"}); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `componentstatuses "nope" not found`) {
		t.Errorf("get nope: %v, want NotFound", err)
	}
}
