package resource

import "testing"

func TestParse(t *testing.T) {
	cases := []struct {
		in    string
		milli int64
	}{
		{"250m", 250},
		{"1", 1000},
		{"1.5", 1500},
		{"0.1", 100},
		{"2", 2000},
		{"128Mi", 128 << 20 * 1000},
		{"1Gi", 1 << 30 * 1000},
		{"1G", 1e9 * 1000},
		{"500M", 5e8 * 1000},
		{"1e3", 1e6},
		{"1k", 1e6},
		{"1.5Ki", 1536 * 1000},
		{"0", 0},
		{"0.0001", 1}, // rounds up
	}
	for _, c := range cases {
		q, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		if q.MilliValue() != c.milli {
			t.Errorf("Parse(%q) = %d milli, want %d", c.in, q.MilliValue(), c.milli)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"", "abc", "1X", "-1", "1..2", "Mi", "1e", "1e99", "1Mii", "99999999999999999Ei"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): want error", bad)
		}
	}
}

func TestFormat(t *testing.T) {
	if s := MustParse("250m").CPUString(); s != "250m" {
		t.Error(s)
	}
	if s := MustParse("2").CPUString(); s != "2" {
		t.Error(s)
	}
	if s := MustParse("128Mi").BytesString(); s != "128Mi" {
		t.Error(s)
	}
	if s := MustParse("1000").BytesString(); s != "1000" {
		t.Error(s)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"250m", "1Gi", "1e3", "0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err == nil && q.MilliValue() < 0 {
			t.Fatalf("%q parsed negative", s)
		}
	})
}
