package printers

import (
	"fmt"
	"io"
	"strings"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/table"
)

// TableOptions are kubectl's table print flags.
type TableOptions struct {
	Wide          bool // -o wide: the columns of priority 1 too
	WithNamespace bool // -A: a NAMESPACE column first (namespaced kinds)
	WithKind      bool // several kinds: the name column prints kind/name
	ShowLabels    bool // --show-labels: a LABELS column last
	NoHeaders     bool // --no-headers
	// LabelColumns are -L's label keys: a column each, after the kind's
	// columns, headed by the key's last path segment in upper case.
	LabelColumns []string
}

// TablePrinter prints the tables of one kind. It keeps its Aligner, so
// rows printed after the table (a watch's) line up with it.
type TablePrinter struct {
	Kind    *kinds.Kind
	Options TableOptions
	Aligner Aligner
}

// shown reports whether column c is printed.
func (p *TablePrinter) shown(c table.Column) bool { return c.Priority == 0 || p.Options.Wide }

// Header is the header row: the shown columns' names in upper case, as
// kubectl prints them, with the decorations of the options.
func (p *TablePrinter) Header(cols []table.Column) []string {
	var h []string
	if p.Options.WithNamespace && p.Kind.Namespaced {
		h = append(h, "NAMESPACE")
	}
	for _, c := range cols {
		if p.shown(c) {
			h = append(h, strings.ToUpper(c.Name))
		}
	}
	for _, l := range p.Options.LabelColumns {
		h = append(h, strings.ToUpper(l[strings.LastIndex(l, "/")+1:]))
	}
	if p.Options.ShowLabels {
		h = append(h, "LABELS")
	}
	return h
}

// Row is a row's shown cells as text, with the decorations of the options.
func (p *TablePrinter) Row(cols []table.Column, r table.Row) []string {
	var out []string
	m := r.Object.GetMetadata()
	if p.Options.WithNamespace && p.Kind.Namespaced {
		out = append(out, m.GetNamespace())
	}
	for i, c := range r.Cells {
		if !p.shown(cols[i]) {
			continue
		}
		s := fmt.Sprint(c)
		if cols[i].Format == "name" && p.Options.WithKind {
			s = ResourceName(p.Kind) + "/" + s
		}
		out = append(out, s)
	}
	for _, l := range p.Options.LabelColumns {
		out = append(out, m.GetLabels()[l])
	}
	if p.Options.ShowLabels {
		out = append(out, table.LabelString(m.GetLabels()))
	}
	return out
}

// PrintTable writes t (the header unless NoHeaders, then its rows) aligned.
func (p *TablePrinter) PrintTable(w io.Writer, t *table.Table) {
	rows := make([][]string, 0, len(t.Rows)+1)
	if !p.Options.NoHeaders {
		rows = append(rows, p.Header(t.Columns))
	}
	for _, r := range t.Rows {
		rows = append(rows, p.Row(t.Columns, r))
	}
	for _, r := range rows {
		p.Aligner.Fit(r)
	}
	for _, r := range rows {
		p.Aligner.WriteRow(w, r)
	}
}

// PrintHeader writes the header alone (a watch of an empty list), unless
// NoHeaders.
func (p *TablePrinter) PrintHeader(w io.Writer) {
	if !p.Options.NoHeaders {
		p.Aligner.WriteRow(w, p.Header(table.Columns(p.Kind)))
	}
}

// PrintRow writes one more row, aligned with those before.
func (p *TablePrinter) PrintRow(w io.Writer, r table.Row) {
	p.Aligner.WriteRow(w, p.Row(table.Columns(p.Kind), r))
}
