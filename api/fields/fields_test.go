package fields

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestMatches(t *testing.T) {
	pod := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec:     &v1.PodSpec{NodeName: "n1"},
		Status:   &v1.PodStatus{Phase: "Running", PodIp: "10.244.1.5"},
	}
	cases := []struct {
		sel  string
		want bool
	}{
		{"", true},
		{"spec.nodeName=n1", true},
		{"spec.nodeName==n1", true},
		{"spec.nodeName=n2", false},
		{"spec.nodeName!=n2", true},
		{"status.phase=Running,metadata.name=web-1", true},
		{"status.phase!=Running", false},
		{"status.podIP=10.244.1.5", true},
		{"metadata.namespace=default", true},
		{"spec.hostNetwork=false", true},
	}
	for _, c := range cases {
		s, err := Parse(c.sel)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.sel, err)
		}
		if err := s.Validate(pod); err != nil {
			t.Fatalf("Validate(%q): %v", c.sel, err)
		}
		if got := s.Matches(pod); got != c.want {
			t.Errorf("%q: got %v want %v", c.sel, got, c.want)
		}
	}
	// Unset nested message compares as "".
	s, _ := Parse("spec.nodeName=")
	if !s.Matches(&v1.Pod{}) {
		t.Errorf("empty pod should match spec.nodeName=")
	}
}

func TestInvalid(t *testing.T) {
	for _, bad := range []string{"spec.nope=1", "spec.containers=x", "spec=x", "metadata.labels=x"} {
		s, err := Parse(bad)
		if err != nil {
			continue
		}
		if err := s.Validate(&v1.Pod{}); err == nil {
			t.Errorf("Validate(%q): want error", bad)
		}
	}
	if _, err := Parse("noequals"); err == nil {
		t.Error("want error for a term with no operator")
	}
}
