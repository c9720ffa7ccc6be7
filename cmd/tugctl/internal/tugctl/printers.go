package tugctl

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Output formats of -o.
const (
	outTable = ""
	outWide  = "wide"
	outYAML  = "yaml"
	outJSON  = "json"
	outName  = "name"
)

func parseOutput(s string) (string, error) {
	switch s {
	case outTable, outWide, outYAML, outJSON, outName:
		return s, nil
	}
	return "", fmt.Errorf("--output %q: want one of wide, yaml, json, name", s)
}

// columns are a kind's table: headers, the extra headers of -o wide, and a
// function giving a row's cells for both.
type columns struct {
	headers []string
	wide    []string
	row     func(obj v1.Object, now time.Time) (cells, wide []string)
}

// printOptions say how rows are made.
type printOptions struct {
	output        string
	withNamespace bool // -A: a NAMESPACE column first
	withKind      bool // several kinds: names print as kind/name
	showLabels    bool
	noHeaders     bool
	now           time.Time
}

func (p printOptions) headers(k *kinds.Kind) []string {
	c := columnsFor(k)
	var h []string
	if p.withNamespace && k.Namespaced {
		h = append(h, "NAMESPACE")
	}
	h = append(h, c.headers...)
	if p.output == outWide {
		h = append(h, c.wide...)
	}
	if p.showLabels {
		h = append(h, "LABELS")
	}
	return h
}

func (p printOptions) row(k *kinds.Kind, obj v1.Object) []string {
	c := columnsFor(k)
	cells, wide := c.row(obj, p.now)
	var r []string
	if p.withNamespace && k.Namespaced {
		r = append(r, obj.GetMetadata().GetNamespace())
	}
	if p.withKind && len(cells) > 0 {
		cells[0] = resourceName(k) + "/" + cells[0]
	}
	r = append(r, cells...)
	if p.output == outWide {
		r = append(r, wide...)
	}
	if p.showLabels {
		r = append(r, labelString(obj.GetMetadata().GetLabels()))
	}
	return r
}

// table aligns rows in columns three spaces apart, as kubectl does. It
// remembers its widths so rows printed later (watch) line up.
type table struct {
	widths []int
}

func (t *table) fit(row []string) {
	for i, c := range row {
		if i >= len(t.widths) {
			t.widths = append(t.widths, 0)
		}
		t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
	}
}

func (t *table) writeRow(w io.Writer, row []string) {
	t.fit(row)
	var b strings.Builder
	for i, c := range row {
		b.WriteString(c)
		if i < len(row)-1 {
			b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)+3))
		}
	}
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}

// writeRows prints rows (the first is usually the header) aligned.
func writeRows(w io.Writer, rows [][]string) {
	t := &table{}
	for _, r := range rows {
		t.fit(r)
	}
	for _, r := range rows {
		t.writeRow(w, r)
	}
}

// writeTable prints objects of one kind as a table and returns it for
// further rows.
func writeTable(w io.Writer, k *kinds.Kind, objs []v1.Object, p printOptions) *table {
	t := &table{}
	rows := make([][]string, 0, len(objs)+1)
	if !p.noHeaders {
		rows = append(rows, p.headers(k))
	}
	for _, o := range objs {
		rows = append(rows, p.row(k, o))
	}
	for _, r := range rows {
		t.fit(r)
	}
	for _, r := range rows {
		t.writeRow(w, r)
	}
	return t
}

// writeObjects prints objects in a non-table format: yaml, json (one
// object alone when single is set, else a List) or name.
func writeObjects(w io.Writer, objs []v1.Object, output string, single bool) error {
	switch output {
	case outName:
		for _, o := range objs {
			k, err := kinds.ForMessage(o)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, objectName(k, o))
		}
		return nil
	case outYAML, outJSON:
		f := manifest.YAML
		if output == outJSON {
			f = manifest.JSON
		}
		var out []byte
		var err error
		if single && len(objs) == 1 {
			out, err = manifest.Marshal(objs[0], f)
		} else {
			out, err = manifest.MarshalList(objs, f)
		}
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	return fmt.Errorf("output %q is not a document format", output)
}

// sortObjects orders objects by namespace and name, as the server does.
func sortObjects(objs []v1.Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i].GetMetadata(), objs[j].GetMetadata()
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}

// age is the kubectl-style age of a timestamp: "<unknown>" when unset.
func age(ts *timestamppb.Timestamp, now time.Time) string {
	if ts == nil {
		return "<unknown>"
	}
	return humanDuration(now.Sub(ts.AsTime()))
}

// humanDuration prints a duration the way kubectl's AGE column does:
// 45s, 5m30s, 42m, 3h20m, 20h, 3d4h, 45d, 2y30d.
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if s := int(d.Round(time.Second) / time.Second); s < 120 {
		return fmt.Sprintf("%ds", s)
	}
	m := int(d / time.Minute)
	h := int(d / time.Hour)
	switch {
	case m < 10:
		if s := int(d/time.Second) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", m, s)
		}
		return fmt.Sprintf("%dm", m)
	case h < 3:
		return fmt.Sprintf("%dm", m)
	case h < 8:
		if m%60 != 0 {
			return fmt.Sprintf("%dh%dm", h, m%60)
		}
		return fmt.Sprintf("%dh", h)
	case h < 48:
		return fmt.Sprintf("%dh", h)
	case h < 24*8:
		if h%24 != 0 {
			return fmt.Sprintf("%dd%dh", h/24, h%24)
		}
		return fmt.Sprintf("%dd", h/24)
	case h < 24*365*2:
		return fmt.Sprintf("%dd", h/24)
	case h < 24*365*8:
		if d := (h / 24) % 365; d != 0 {
			return fmt.Sprintf("%dy%dd", h/24/365, d)
		}
		return fmt.Sprintf("%dy", h/24/365)
	}
	return fmt.Sprintf("%dy", h/24/365)
}

// labelString is "a=b,c=d" sorted, or "<none>".
func labelString(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
