// Package printers is how tugctl prints: api/table's Tables as kubectl's
// aligned text (the NAMESPACE, kind/name and LABELS decorations of -A,
// several kinds and --show-labels, and -o wide's extra columns), objects
// as YAML, JSON or names (-o), rows of any other table (top, token list,
// image ls, ...), and the names of kinds and objects in messages
// ("deployment.apps/nginx", `deployments.apps "x" not found`).
//
// What the columns are and what a cell holds is api/table's; this package
// only lays them out, so the text does not depend on where the Table was
// made. It writes to the io.Writer given and never reads the cluster.
package printers

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Output formats of -o.
const (
	Table = ""
	Wide  = "wide"
	YAML  = "yaml"
	JSON  = "json"
	Name  = "name"
)

// Aligner lays rows out in columns three spaces apart, as kubectl does. It
// remembers its widths so rows printed later (watch) line up.
type Aligner struct {
	widths []int
}

// Fit widens the columns to hold row.
func (a *Aligner) Fit(row []string) {
	for i, c := range row {
		if i >= len(a.widths) {
			a.widths = append(a.widths, 0)
		}
		a.widths[i] = max(a.widths[i], utf8.RuneCountInString(c))
	}
}

// WriteRow fits row and writes it.
func (a *Aligner) WriteRow(w io.Writer, row []string) {
	a.Fit(row)
	var b strings.Builder
	for i, c := range row {
		b.WriteString(c)
		if i < len(row)-1 {
			b.WriteString(strings.Repeat(" ", a.widths[i]-utf8.RuneCountInString(c)+3))
		}
	}
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}

// WriteRows writes rows (the first is usually the header) aligned, and
// returns the Aligner for further rows.
func WriteRows(w io.Writer, rows [][]string) *Aligner {
	a := &Aligner{}
	for _, r := range rows {
		a.Fit(r)
	}
	for _, r := range rows {
		a.WriteRow(w, r)
	}
	return a
}
