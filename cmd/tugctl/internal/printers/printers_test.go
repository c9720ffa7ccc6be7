package printers

import (
	"strings"
	"testing"
)

func TestAligner(t *testing.T) {
	var b strings.Builder
	a := &Aligner{}
	a.Fit([]string{"NAME", "READY"})
	a.Fit([]string{"a-long-name", "1/1"})
	a.WriteRow(&b, []string{"NAME", "READY"})
	a.WriteRow(&b, []string{"a-long-name", "1/1"})
	a.WriteRow(&b, []string{"b", "0/1"}) // a later (watch) row lines up
	want := "NAME          READY\na-long-name   1/1\nb             0/1\n"
	if b.String() != want {
		t.Errorf("table =\n%s\nwant\n%s", b.String(), want)
	}
}
