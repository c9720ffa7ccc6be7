package apiserver

import (
	"testing"

	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/flowcontrol"
)

func TestPriorityLevel(t *testing.T) {
	authed := func(name string, groups ...string) *auth.User {
		return &auth.User{Name: name, Groups: append(groups, auth.GroupAuthenticated)}
	}
	node := authed(auth.NodePrefix+"n1", auth.GroupNodes)
	for _, c := range []struct {
		name string
		user *auth.User
		kind string
		want string
	}{
		{"authentication off", nil, "Pod", flowcontrol.Exempt},
		{"masters", authed("admin", auth.GroupMasters), "Pod", flowcontrol.Exempt},
		{"scheduler lease", authed(pki.UserScheduler), "Lease", flowcontrol.LeaderElection},
		{"controller-manager lease", authed(pki.UserControllers), "Lease", flowcontrol.LeaderElection},
		{"kube-system service account lease", authed(auth.ServiceAccountPrefix + "kube-system:ingress"), "Lease", flowcontrol.LeaderElection},
		{"scheduler bind", authed(pki.UserScheduler), "Pod", flowcontrol.WorkloadHigh},
		{"controller-manager pod create", authed(pki.UserControllers), "Pod", flowcontrol.WorkloadHigh},
		{"node lease", node, "Lease", flowcontrol.NodeHigh},
		{"node status", node, "Node", flowcontrol.NodeHigh},
		{"node's pod status", node, "Pod", flowcontrol.System},
		{"other service account", authed(auth.ServiceAccountPrefix + "default:app"), "Lease", flowcontrol.WorkloadLow},
		{"user", authed("alice"), "Deployment", flowcontrol.GlobalDefault},
		{"anonymous", &auth.User{Name: auth.UserAnonymous, Groups: []string{auth.GroupUnauthenticated}}, "Pod", flowcontrol.CatchAll},
	} {
		if got := priorityLevel(c.user, c.kind); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
