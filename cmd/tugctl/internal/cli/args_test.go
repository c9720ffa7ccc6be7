package cli

import (
	"strings"
	"testing"
)

func TestParseResourceArgs(t *testing.T) {
	tests := []struct {
		args  []string
		kinds string // kinds listed
		refs  string // kind/name refs
		err   string
	}{
		{args: []string{"po"}, kinds: "Pod"},
		{args: []string{"deployments.apps", "a", "b"}, kinds: "Deployment", refs: "Deployment/a Deployment/b"},
		{args: []string{"po,svc"}, kinds: "Pod Service"},
		{args: []string{"all"}, kinds: "Pod Service Deployment ReplicaSet"},
		{args: []string{"deploy/a", "rs/b"}, refs: "Deployment/a ReplicaSet/b"},
		{args: []string{"NODES", "n1"}, kinds: "Node", refs: "Node/n1"},
		{args: []string{"deploy/a", "b"}, err: "mix of KIND/NAME and KIND NAME"},
		{args: []string{"po", "po/a"}, err: "no need to name the kind twice"},
		{args: []string{"pdo"}, err: `the server doesn't have a resource type "pdo"`},
		{args: nil, err: "you must specify the type of resource"},
	}
	for _, tc := range tests {
		ra, err := ParseResourceArgs(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err = %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		var ks, rs []string
		for _, k := range ra.Kinds {
			ks = append(ks, k.Name)
		}
		for _, r := range ra.Refs {
			rs = append(rs, r.Kind.Name+"/"+r.Name)
		}
		if strings.Join(ks, " ") != tc.kinds || strings.Join(rs, " ") != tc.refs {
			t.Errorf("%v: kinds %v refs %v", tc.args, ks, rs)
		}
	}
}
