package apiserver_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// The system classes exist; pods get their class's value (or the global
// default's, else 0) and preemption policy; a missing class, a second
// global default, a hand-set priority and bad values are refused naming
// the field, and nothing is stored.
func TestPriorityAdmission(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pcs := client.For[*v1.PriorityClass](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	if pc, err := pcs.Get(ctx, "", "system-node-critical"); err != nil || pc.Value != 2000001000 {
		t.Fatalf("system-node-critical: %v %v", pc, err)
	}
	p, err := pods.Create(ctx, newPod("plain", nil))
	if err != nil || p.Spec.Priority != 0 || p.Spec.PriorityClassName != "" {
		t.Fatalf("no class, no default: %v %v", p.GetSpec(), err)
	}
	if _, err := pcs.Create(ctx, &v1.PriorityClass{Metadata: &v1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: proto.String("Never")}); err != nil {
		t.Fatal(err)
	}
	if _, err := pcs.Create(ctx, &v1.PriorityClass{Metadata: &v1.ObjectMeta{Name: "low"}, Value: 10, GlobalDefault: true}); err != nil {
		t.Fatal(err)
	}
	p = newPod("urgent", nil)
	p.Spec.PriorityClassName = "high"
	if got, err := pods.Create(ctx, p); err != nil || got.Spec.Priority != 1000 || got.Spec.GetPreemptionPolicy() != "Never" {
		t.Errorf("pod of class high: %v %v", got.GetSpec(), err)
	}
	if got, err := pods.Create(ctx, newPod("usual", nil)); err != nil || got.Spec.Priority != 10 || got.Spec.PriorityClassName != "low" {
		t.Errorf("pod of the global default: %v %v", got.GetSpec(), err)
	}
	for _, tc := range []struct {
		name string
		edit func(*v1.PodSpec)
		want string
	}{
		{"missing", func(s *v1.PodSpec) { s.PriorityClassName = "gold" }, `pods "missing" is forbidden: no PriorityClass with name gold was found`},
		{"handset", func(s *v1.PodSpec) { s.Priority = 5 }, `the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 10`},
		{"preempt", func(s *v1.PodSpec) { s.PreemptionPolicy = proto.String("Sometimes") }, `spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"`},
	} {
		p := newPod(tc.name, nil)
		tc.edit(p.Spec)
		if _, err := pods.Create(ctx, p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if _, err := pods.Get(ctx, "default", tc.name); err == nil {
			t.Errorf("%s stored", tc.name)
		}
	}
	for _, tc := range []struct {
		pc   *v1.PriorityClass
		want string
	}{
		{&v1.PriorityClass{Metadata: &v1.ObjectMeta{Name: "other-default"}, Value: 1, GlobalDefault: true}, "globalDefault: Forbidden: globalDefault is already set to PriorityClass low"},
		{&v1.PriorityClass{Metadata: &v1.ObjectMeta{Name: "huge"}, Value: 1000000001}, "value: 1000000001: must be no greater than 1000000000"},
		{&v1.PriorityClass{Metadata: &v1.ObjectMeta{Name: "system-mine"}, Value: 1}, "metadata.name: \"system-mine\": the prefix system- is reserved"},
	} {
		if _, err := pcs.Create(ctx, tc.pc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.pc.Metadata.Name, err, tc.want)
		}
	}
	high, _ := pcs.Get(ctx, "", "high")
	high.Value = 2000
	if _, err := pcs.Update(ctx, high); err == nil || !strings.Contains(err.Error(), "value: may not be changed") {
		t.Errorf("value update: %v", err)
	}
}
