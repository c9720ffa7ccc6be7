package labels

import "testing"

func TestParseAndMatch(t *testing.T) {
	set := map[string]string{"app": "web", "tier": "front", "env": "prod"}
	cases := []struct {
		sel   string
		match bool
	}{
		{"", true},
		{"app=web", true},
		{"app==web", true},
		{"app=db", false},
		{"app!=db", true},
		{"tier!=front", false},
		{"env in (prod,stage)", true},
		{"env in (dev)", false},
		{"env notin (dev, stage)", true},
		{"app", true},
		{"missing", false},
		{"!missing", true},
		{"!app", false},
		{"app=web,tier=front", true},
		{"app=web, tier=back", false},
		{"nokey!=x", true},
	}
	for _, c := range cases {
		s, err := Parse(c.sel)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.sel, err)
		}
		if got := s.Matches(set); got != c.match {
			t.Errorf("%q matches=%v, want %v", c.sel, got, c.match)
		}
		// String must round-trip.
		again, err := Parse(s.String())
		if err != nil || again.String() != s.String() {
			t.Errorf("round trip of %q: %q, %v", c.sel, again.String(), err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"a=b,", "env in prod", "env in ()", "a b", "a=(", "env in (a", "-bad=x", "a=b c"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): want error", bad)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"a=b", "x in (a,b),!y", "k!=v,z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(sel.String())
		if err != nil {
			t.Fatalf("reparse of %q (from %q): %v", sel.String(), s, err)
		}
		if again.String() != sel.String() {
			t.Fatalf("unstable: %q vs %q", again.String(), sel.String())
		}
	})
}
