package printers

import (
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/client-go/util/jsonpath"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// column is one custom column: its header and the JSONPath of its cells.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// relaxedJSONPath is kubectl's RelaxedJSONPathExpression: "metadata.name",
// ".metadata.name", "{metadata.name}" and "{.metadata.name}" all mean
// "{.metadata.name}".
var relaxedJSONPathRE = regexp.MustCompile(`^\{?(\.?[^{}]+)\}?$`)

// RelaxedJSONPath turns a field path of custom-columns or --sort-by into a
// JSONPath template.
func RelaxedJSONPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	m := relaxedJSONPathRE.FindStringSubmatch(p)
	if m == nil {
		return "", fmt.Errorf("unexpected path string %q, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'", p)
	}
	return "{." + strings.TrimPrefix(m[1], ".") + "}", nil
}

func newColumn(header, path string) (column, error) {
	expr, err := RelaxedJSONPath(path)
	if err != nil {
		return column{}, err
	}
	jp := jsonpath.New(header).AllowMissingKeys(true)
	if err := jp.Parse(expr); err != nil {
		return column{}, fmt.Errorf("custom-columns %s:%s: error parsing jsonpath %s, %v", header, path, expr, err)
	}
	return column{header: header, path: jp}, nil
}

// columnsFromSpec reads HEADER:PATH,HEADER:PATH.
func columnsFromSpec(spec string) ([]column, error) {
	var out []column
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok || header == "" {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		c, err := newColumn(header, path)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// columnsFromFile reads a line of headers and a line of paths.
func columnsFromFile(text string) ([]column, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("custom-columns-file: want 2 lines (headers, then paths), got %d", len(lines))
	}
	headers, paths := strings.Fields(lines[0]), strings.Fields(lines[1])
	if len(headers) != len(paths) {
		return nil, fmt.Errorf("custom-columns-file: number of headers (%d) and field specifications (%d) don't match", len(headers), len(paths))
	}
	out := make([]column, len(headers))
	for i := range headers {
		c, err := newColumn(headers[i], paths[i])
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// printColumns writes a row per object, kubectl's way: every result of a
// column's path, comma separated, "<none>" when there is none.
func (o *Output) printColumns(w io.Writer, objs []v1.Object) error {
	tw := newTabWriter(w)
	if !o.NoHeaders && !o.headerDone {
		hs := make([]string, len(o.columns))
		for i, c := range o.columns {
			hs[i] = c.header
		}
		fmt.Fprintln(tw, strings.Join(hs, "\t"))
	}
	o.headerDone = true
	for _, obj := range objs {
		v, err := ObjectValue(obj)
		if err != nil {
			return err
		}
		cells := make([]string, len(o.columns))
		for i, c := range o.columns {
			res, err := c.path.FindResults(v)
			if err != nil {
				return fmt.Errorf("custom-columns %s: %v", c.header, err)
			}
			var vals []string
			for _, r := range res {
				for _, x := range r {
					vals = append(vals, valueString(x))
				}
			}
			cells[i] = "<none>"
			if len(vals) > 0 {
				cells[i] = strings.Join(vals, ",")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func valueString(v reflect.Value) string {
	if !v.IsValid() {
		return "<none>"
	}
	if v.Kind() == reflect.Interface && v.IsNil() {
		return "<none>"
	}
	return fmt.Sprint(v.Interface())
}
