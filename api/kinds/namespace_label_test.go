package kinds

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Every namespace carries kubernetes.io/metadata.name = its name, as in
// Kubernetes: set on create and put back on update whatever the user sent.
func TestNamespaceNameLabel(t *testing.T) {
	k, _ := Lookup("Namespace")
	for _, labels := range []map[string]string{nil, {"team": "a"}, {NamespaceNameLabel: "other"}} {
		n := &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "prod", Labels: labels}}
		k.Default(n)
		if got := n.Metadata.Labels[NamespaceNameLabel]; got != "prod" {
			t.Errorf("labels %v: %s=%q, want prod", labels, NamespaceNameLabel, got)
		}
		if labels["team"] != "" && n.Metadata.Labels["team"] != "a" {
			t.Errorf("other labels lost: %v", n.Metadata.Labels)
		}
	}
}
