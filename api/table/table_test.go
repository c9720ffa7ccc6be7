package table

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestHumanDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"}, {0, "0s"}, {45 * time.Second, "45s"}, {119 * time.Second, "119s"},
		{2 * time.Minute, "2m"}, {5*time.Minute + 30*time.Second, "5m30s"}, {42 * time.Minute, "42m"},
		{3*time.Hour + 20*time.Minute, "3h20m"}, {5 * time.Hour, "5h"}, {20 * time.Hour, "20h"},
		{76 * time.Hour, "3d4h"}, {45 * 24 * time.Hour, "45d"}, {(2*365 + 30) * 24 * time.Hour, "2y30d"}, {9 * 365 * 24 * time.Hour, "9y"},
	}
	for _, tc := range tests {
		if got := HumanDuration(tc.d); got != tc.want {
			t.Errorf("HumanDuration(%v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

func TestPodStatusColumn(t *testing.T) {
	now := time.Now()
	running := &v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	waiting := func(r string) *v1.ContainerState {
		return &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: r}}
	}
	term := func(code, sig int32, reason string) *v1.ContainerState {
		return &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Signal: sig, Reason: reason}}
	}
	pod := func(spec *v1.PodSpec, st *v1.PodStatus) *v1.Pod {
		if spec == nil {
			spec = &v1.PodSpec{Containers: []*v1.Container{{Name: "a"}}}
		}
		return &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p"}, Spec: spec, Status: st}
	}
	two := &v1.PodSpec{Containers: []*v1.Container{{Name: "a"}, {Name: "b"}}}
	withInit := &v1.PodSpec{InitContainers: []*v1.Container{{Name: "i1"}, {Name: "i2"}}, Containers: []*v1.Container{{Name: "a"}}}
	deleting := pod(nil, &v1.PodStatus{Phase: "Running"})
	deleting.Metadata.DeletionTimestamp = timestamppb.Now()
	lost := pod(nil, &v1.PodStatus{Phase: "Running", Reason: "NodeLost"})
	lost.Metadata.DeletionTimestamp = timestamppb.Now()
	tests := []struct {
		name                    string
		pod                     *v1.Pod
		ready, status, restarts string
	}{
		{"pending, no status", pod(nil, &v1.PodStatus{Phase: "Pending"}), "0", "Pending", "0"},
		{"running and ready", pod(two, &v1.PodStatus{Phase: "Running", ContainerStatuses: []*v1.ContainerStatus{
			{Name: "a", Ready: true, State: running}, {Name: "b", Ready: true, State: running}}}), "2", "Running", "0"},
		{"crash loop", pod(two, &v1.PodStatus{Phase: "Running", ContainerStatuses: []*v1.ContainerStatus{
			{Name: "a", Ready: true, State: running, RestartCount: 1}, {Name: "b", State: waiting("CrashLoopBackOff"), RestartCount: 5}}}), "1", "CrashLoopBackOff", "6"},
		{"image pull", pod(nil, &v1.PodStatus{Phase: "Pending", ContainerStatuses: []*v1.ContainerStatus{{Name: "a", State: waiting("ImagePullBackOff")}}}), "0", "ImagePullBackOff", "0"},
		{"error exit", pod(nil, &v1.PodStatus{Phase: "Failed", ContainerStatuses: []*v1.ContainerStatus{{Name: "a", State: term(1, 0, "Error")}}}), "0", "Error", "0"},
		{"exit code without reason", pod(nil, &v1.PodStatus{Phase: "Failed", ContainerStatuses: []*v1.ContainerStatus{{Name: "a", State: term(3, 0, "")}}}), "0", "ExitCode:3", "0"},
		{"signal", pod(nil, &v1.PodStatus{Phase: "Failed", ContainerStatuses: []*v1.ContainerStatus{{Name: "a", State: term(0, 9, "")}}}), "0", "Signal:9", "0"},
		{"completed one, other running, ready", pod(two, &v1.PodStatus{Phase: "Running", Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}},
			ContainerStatuses: []*v1.ContainerStatus{{Name: "a", Ready: true, State: running}, {Name: "b", State: term(0, 0, "Completed")}}}), "1", "Running", "0"},
		{"completed one, other running, not ready", pod(two, &v1.PodStatus{Phase: "Running",
			ContainerStatuses: []*v1.ContainerStatus{{Name: "a", Ready: true, State: running}, {Name: "b", State: term(0, 0, "Completed")}}}), "1", "NotReady", "0"},
		{"init running", pod(withInit, &v1.PodStatus{Phase: "Pending", InitContainerStatuses: []*v1.ContainerStatus{
			{Name: "i1", State: term(0, 0, "Completed")}, {Name: "i2", State: running}}}), "0", "Init:1/2", "0"},
		{"init failing", pod(withInit, &v1.PodStatus{Phase: "Pending", InitContainerStatuses: []*v1.ContainerStatus{
			{Name: "i1", State: waiting("CrashLoopBackOff"), RestartCount: 2}}}), "0", "Init:CrashLoopBackOff", "2"},
		{"init error", pod(withInit, &v1.PodStatus{Phase: "Pending", InitContainerStatuses: []*v1.ContainerStatus{
			{Name: "i1", State: term(2, 0, "")}}}), "0", "Init:ExitCode:2", "0"},
		{"terminating", deleting, "0", "Terminating", "0"},
		{"node lost", lost, "0", "Unknown", "0"},
		{"evicted", pod(nil, &v1.PodStatus{Phase: "Failed", Reason: "Evicted"}), "0", "Evicted", "0"},
	}
	for _, tc := range tests {
		ready, status, restarts := PodStatus(tc.pod, now)
		if ready != tc.ready || status != tc.status || restarts != tc.restarts {
			t.Errorf("%s: got %s %s %s, want %s %s %s", tc.name, ready, status, restarts, tc.ready, tc.status, tc.restarts)
		}
	}
	// The last restart's age follows the count.
	p := pod(nil, &v1.PodStatus{Phase: "Running", ContainerStatuses: []*v1.ContainerStatus{{Name: "a", State: running, Ready: true, RestartCount: 2,
		LastState: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{FinishedAt: timestamppb.New(now.Add(-3 * time.Minute))}}}}})
	if _, _, restarts := PodStatus(p, now); restarts != "2 (3m ago)" {
		t.Errorf("restarts = %q", restarts)
	}
}

func TestNodeStatusColumn(t *testing.T) {
	node := func(status string, unsched bool) *v1.Node {
		n := &v1.Node{Spec: &v1.NodeSpec{Unschedulable: unsched}, Status: &v1.NodeStatus{}}
		if status != "" {
			n.Status.Conditions = []*v1.Condition{{Type: "Ready", Status: status}}
		}
		return n
	}
	for _, tc := range []struct {
		n    *v1.Node
		want string
	}{
		{node("True", false), "Ready"}, {node("False", false), "NotReady"}, {node("Unknown", false), "Unknown"},
		{node("", false), "Unknown"}, {node("True", true), "Ready,SchedulingDisabled"},
	} {
		if got := nodeStatus(tc.n); got != tc.want {
			t.Errorf("nodeStatus = %s, want %s", got, tc.want)
		}
	}
}

// Every kind's rows have a cell per column, of the column's type, for an
// empty object and a filled one alike; the name column is the first one
// where the kind has one shown by default.
func TestRowsMatchColumns(t *testing.T) {
	now := time.Now()
	for _, k := range kinds.All() {
		cols := Columns(k)
		for _, obj := range []v1.Object{k.New(), filled(k)} {
			row := RowOf(k, obj, now)
			if len(row.Cells) != len(cols) {
				t.Errorf("%s: %d cells for %d columns", k.Name, len(row.Cells), len(cols))
				continue
			}
			for i, c := range row.Cells {
				switch c.(type) {
				case string:
					if cols[i].Type != "string" {
						t.Errorf("%s column %s: a string cell in a %s column", k.Name, cols[i].Name, cols[i].Type)
					}
				case int64:
					if cols[i].Type != "integer" {
						t.Errorf("%s column %s: an int64 cell in a %s column", k.Name, cols[i].Name, cols[i].Type)
					}
				default:
					t.Errorf("%s column %s: cell %v is a %T", k.Name, cols[i].Name, c, c)
				}
			}
		}
		for _, c := range cols {
			if c.Name == "" || c.Description == "" || (c.Priority != 0 && c.Priority != 1) {
				t.Errorf("%s: column %+v", k.Name, c)
			}
		}
	}
}

// filled is an object of kind k with a name and a creation time.
func filled(k *kinds.Kind) v1.Object {
	o := k.New()
	v1.Meta(o).Name = "x"
	v1.Meta(o).CreationTimestamp = timestamppb.Now()
	return o
}

// A table encodes with the field names of meta.k8s.io/v1 Table.
func TestTableJSON(t *testing.T) {
	k, _ := kinds.Lookup("ConfigMap")
	now := time.Now()
	cm := &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "cfg", CreationTimestamp: timestamppb.New(now.Add(-time.Minute))}, Data: map[string]string{"a": "1"}}
	out, err := json.Marshal(For(k, []v1.Object{cm}, now))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"` + nameColumn.Description + `","priority":0},` +
		`{"name":"Data","type":"integer","format":"","description":"` + configMapColumns[1].Description + `","priority":0},` +
		`{"name":"Age","type":"string","format":"","description":"` + ageColumn.Description + `","priority":0}],` +
		`"rows":[{"cells":["cfg",1,"60s"]}]}`
	if string(out) != want {
		t.Errorf("json =\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(string(out), `"cells":["cfg",1,`) {
		t.Errorf("integer cells must encode as numbers: %s", out)
	}
}
