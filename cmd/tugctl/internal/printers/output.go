package printers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"text/template"

	"google.golang.org/protobuf/proto"
	"k8s.io/client-go/util/jsonpath"

	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Output formats of -o that take a template (the part after "=").
const (
	JSONPath      = "jsonpath"
	GoTemplate    = "go-template"
	CustomColumns = "custom-columns"
)

// Output is a parsed -o value: a format, and for the template formats
// the parsed template. Table and Wide are printed by a TablePrinter; the
// others by Print.
type Output struct {
	Format string
	// NoHeaders leaves out the custom-columns header (--no-headers).
	NoHeaders bool
	// ShowManagedFields keeps metadata.managedFields in the documents
	// (--show-managed-fields); by default they are left out, as kubectl
	// does.
	ShowManagedFields bool

	text       string // the template as given, for errors
	path       *jsonpath.JSONPath
	tmpl       *template.Template
	columns    []column
	headerDone bool
}

// WithoutManagedFields is objs with metadata.managedFields left out
// (copies of the objects that have them; objs itself is not changed).
func WithoutManagedFields(objs []v1.Object) []v1.Object {
	out, cloned := objs, false
	for i, obj := range objs {
		if len(obj.GetMetadata().GetManagedFields()) == 0 {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(objs), true
		}
		c := proto.Clone(obj).(v1.Object)
		v1.Meta(c).ManagedFields = nil
		out[i] = c
	}
	return out
}

// IsTable reports whether the output is a table of api/table's columns.
func (o *Output) IsTable() bool { return o.Format == Table || o.Format == Wide }

// ParseOutput checks an -o value: wide, yaml, json, name,
// jsonpath=TEMPLATE, jsonpath-file=FILE, go-template=TEMPLATE,
// go-template-file=FILE, custom-columns=SPEC, custom-columns-file=FILE.
// A template that does not parse is an error naming it.
func ParseOutput(s string) (*Output, error) {
	format, arg, hasArg := strings.Cut(s, "=")
	fromFile := false
	switch format {
	case Table, Wide, YAML, JSON, Name:
		if !hasArg {
			return &Output{Format: format}, nil
		}
	case "jsonpath-file", "go-template-file", "custom-columns-file":
		if arg == "" {
			return nil, fmt.Errorf("--output %s: no file given (%s=FILE)", s, format)
		}
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, fmt.Errorf("--output %s: %w", s, err)
		}
		arg, fromFile = string(b), true
		format = strings.TrimSuffix(format, "-file")
		fallthrough
	case JSONPath, GoTemplate, CustomColumns:
		if strings.TrimSpace(arg) == "" {
			return nil, fmt.Errorf("--output %s: template format specified but no template given (%s=TEMPLATE)", s, format)
		}
		return parseTemplate(format, arg, fromFile)
	}
	return nil, fmt.Errorf("--output %q: want one of wide, yaml, json, name, jsonpath=..., jsonpath-file=..., custom-columns=..., custom-columns-file=..., go-template=..., go-template-file=...", s)
}

func parseTemplate(format, text string, fromFile bool) (*Output, error) {
	o := &Output{Format: format, text: text}
	switch format {
	case JSONPath:
		o.path = jsonpath.New("out").AllowMissingKeys(true)
		if err := o.path.Parse(text); err != nil {
			return nil, fmt.Errorf("error parsing jsonpath %s, %v", text, err)
		}
	case GoTemplate:
		t, err := template.New("output").Funcs(templateFuncs).Parse(text)
		if err != nil {
			return nil, fmt.Errorf("error parsing template %s, %v", text, err)
		}
		o.tmpl = t
	case CustomColumns:
		var err error
		if fromFile {
			o.columns, err = columnsFromFile(text)
		} else {
			o.columns, err = columnsFromSpec(text)
		}
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// templateFuncs are kubectl's go-template functions.
var templateFuncs = template.FuncMap{
	"exists": func(item map[string]any, keys ...string) bool {
		for _, k := range keys {
			v, ok := item[k]
			if !ok {
				return false
			}
			if m, ok := v.(map[string]any); ok {
				item = m
			}
		}
		return true
	},
	"base64decode": func(s string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", fmt.Errorf("base64decode(%q): %v", s, err)
		}
		return string(b), nil
	},
}

// Print writes objs in a document format: yaml, json or a template's
// output (of the object alone when single is set, else of a List holding
// them, as kubectl gives a list to the template), names, or custom
// columns (a row per object, after a header unless NoHeaders; a later
// call for the same Output adds rows only, for a watch).
func (o *Output) Print(w io.Writer, objs []v1.Object, single bool) error {
	if !o.ShowManagedFields {
		objs = WithoutManagedFields(objs)
	}
	switch o.Format {
	case YAML, JSON, Name:
		return WriteObjects(w, objs, o.Format, single)
	case CustomColumns:
		return o.printColumns(w, objs)
	}
	data, err := Document(objs, single)
	if err != nil {
		return err
	}
	switch o.Format {
	case JSONPath:
		if err := o.path.Execute(w, data); err != nil {
			return fmt.Errorf("error executing jsonpath %q: %v", o.text, err)
		}
		return nil
	case GoTemplate:
		var b bytes.Buffer
		if err := o.tmpl.Execute(&b, data); err != nil {
			return fmt.Errorf("error executing template %q: %v", o.text, err)
		}
		_, err := w.Write(b.Bytes())
		return err
	}
	return fmt.Errorf("output %q is not a document format", o.Format)
}

// Document is objs as Kubernetes-shaped JSON values (maps, slices,
// strings, int64, float64, bool): the object alone when single, else a
// List as kubectl builds it.
func Document(objs []v1.Object, single bool) (any, error) {
	items := make([]any, 0, len(objs))
	for _, obj := range objs {
		v, err := ObjectValue(obj)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	if single && len(items) == 1 {
		return items[0], nil
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}, nil
}

// ObjectValue is obj's Kubernetes-shaped JSON as generic values, with
// integers as int64 (as Kubernetes' unstructured objects hold them, so a
// port prints as 80, not 80.0).
func ObjectValue(obj v1.Object) (any, error) {
	b, err := manifest.Marshal(obj, manifest.JSON)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// newTabWriter is kubectl's (printers.GetNewTabWriter): cells at least 6
// wide, 3 spaces apart.
func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}
