package diagnose

import "testing"

func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		name  string
		names []string
		want  string
	}{
		{"wbe", []string{"db", "web"}, "; did you mean web?"},
		{"frontend", []string{"web"}, ""},
		{"web", nil, ""},
	} {
		if got := didYouMean(c.name, c.names); got != c.want {
			t.Errorf("didYouMean(%q, %v) = %q, want %q", c.name, c.names, got, c.want)
		}
	}
}
