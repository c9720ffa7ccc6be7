// Package componentstatus turns the cluster status (the gRPC
// Cluster.Status answer: every apiserver, every etcd member, the
// scheduler's and controller-manager's leaders) into Kubernetes'
// ComponentStatus items (v1, deprecated upstream but what `kubectl get cs`
// reads), so the Kubernetes API (apiserver/kubeapi) and `tugctl get
// componentstatuses` show the same names, conditions and messages.
//
// Each item has one condition, type Healthy, status True with a message,
// or False with an error, as kube-apiserver's. Names: scheduler and
// controller-manager (as Kubernetes), etcd-N (N the member's place in the
// member list, as Kubernetes numbers its etcd servers), and
// apiserver-<id> per apiserver (its identity Lease's name).
package componentstatus

import (
	"fmt"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Condition is a v1 ComponentCondition.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Item is a v1 ComponentStatus.
type Item struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   map[string]any `json:"metadata"`
	Conditions []Condition    `json:"conditions"`
}

// Name is the item's metadata.name.
func (it Item) Name() string { s, _ := it.Metadata["name"].(string); return s }

// Healthy reports its Healthy condition.
func (it Item) Healthy() bool { return len(it.Conditions) > 0 && it.Conditions[0].Status == "True" }

// StatusText is kubectl's STATUS column: Healthy or Unhealthy.
func (it Item) StatusText() string {
	if it.Healthy() {
		return "Healthy"
	}
	return "Unhealthy"
}

// Items are the cluster status as ComponentStatus items: the leaders,
// then the etcd members, then the apiservers.
func Items(st *v1.ClusterStatus) []Item {
	var out []Item
	add := func(name string, healthy bool, msg, errText string) {
		c := Condition{Type: "Healthy", Status: "True", Message: msg}
		if !healthy {
			c = Condition{Type: "Healthy", Status: "False", Error: errText}
		}
		out = append(out, Item{Kind: "ComponentStatus", APIVersion: "v1",
			Metadata: map[string]any{"name": name, "creationTimestamp": nil}, Conditions: []Condition{c}})
	}
	for _, l := range st.GetLeaders() {
		add(l.GetComponent(), l.GetHealthy(), "ok, leader "+l.GetHolder(), l.GetError())
	}
	for i, m := range st.GetEtcdMembers() {
		msg := fmt.Sprintf("ok, member %s, raft index %d, db %s", m.GetName(), m.GetRaftIndex(), Bytes(m.GetDbSize()))
		if m.GetLeader() {
			msg += ", leader"
		}
		errText := m.GetError()
		if len(m.GetClientUrls()) > 0 {
			errText = strings.Join(m.GetClientUrls(), ",") + ": " + errText
		}
		add(fmt.Sprintf("etcd-%d", i), m.GetHealthy(), msg, errText)
	}
	for _, a := range st.GetApiservers() {
		add(a.GetName(), a.GetHealthy(), "ok, "+a.GetAddress(), a.GetAddress()+": "+a.GetError())
	}
	return out
}

// Bytes prints a size as etcdctl's table does, in binary units.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Only is st with only the component of that ComponentStatus name (as
// Items names them), or nil if none has it. AnsweredBy is kept.
func Only(st *v1.ClusterStatus, name string) *v1.ClusterStatus {
	out := &v1.ClusterStatus{AnsweredBy: st.GetAnsweredBy()}
	for _, l := range st.GetLeaders() {
		if l.GetComponent() == name {
			out.Leaders = append(out.Leaders, l)
			return out
		}
	}
	for i, m := range st.GetEtcdMembers() {
		if fmt.Sprintf("etcd-%d", i) == name {
			out.EtcdMembers = append(out.EtcdMembers, m)
			return out
		}
	}
	for _, a := range st.GetApiservers() {
		if a.GetName() == name {
			out.Apiservers = append(out.Apiservers, a)
			return out
		}
	}
	return nil
}
