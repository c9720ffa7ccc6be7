package basic

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/openapi"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// explain prints a kind's fields and their descriptions from the schemas
// the apiserver's Kubernetes door serves as OpenAPI (api/openapi: built
// from the protobuf descriptors and the comments of the .proto files), in
// kubectl explain's plain-text layout, so both CLIs explain a field with
// the same words. It needs no server: the schemas are compiled in.

func newExplainCommand(o *cli.Options) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "explain KIND[.FIELD[.FIELD...]] [--recursive]",
		Short: "Describe the fields of a kind: types and descriptions",
		Long: `Describe a kind, or one of its fields by its path (pods.spec.containers.env):
the field's type, its description (from the comments of the API's .proto
files) and its fields, as kubectl explain prints them. --recursive lists
the fields of the fields too, without descriptions.`,
		Example: "  tugctl explain deployments\n  tugctl explain pod.spec.containers.ports\n  tugctl explain svc.spec --recursive",
		Args:    cli.ExactArgs(1, "KIND[.FIELD...]"),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return cli.KindNames(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return explain(o.Out, args[0], recursive)
		},
	}
	cmd.Flags().BoolVar(&recursive, "recursive", false, "list the fields of every field, without descriptions")
	return cmd
}

// explainer walks the schemas of one OpenAPI v3 document set.
type explainer struct {
	schemas map[string]openapi.Schema
}

// explain prints KIND[.FIELD...] to w.
func explain(w io.Writer, arg string, recursive bool) error {
	kindName, path, _ := strings.Cut(arg, ".")
	k, err := kinds.Lookup(kindName)
	if err != nil {
		return fmt.Errorf("the server doesn't have a resource type %q", kindName)
	}
	// "deployments.apps.spec": a group suffix is part of the kind's name.
	if g := groupOf(k); g != "" && (path == g || strings.HasPrefix(path, g+".")) {
		path = strings.TrimPrefix(strings.TrimPrefix(path, g), ".")
	}
	e := explainer{schemas: openapi.Schemas(kinds.All(), openapi.V3)}
	s := e.schemas[openapi.DefinitionName(k)]
	var fieldName, fieldType, desc string
	desc = str(s["description"])
	if path != "" {
		for _, f := range strings.Split(path, ".") {
			props := e.properties(s)
			fs, ok := props[f]
			if !ok {
				return fmt.Errorf("field %q does not exist", f)
			}
			fieldName, fieldType = f, e.typeName(fs)
			s, desc = e.resolve(fs)
		}
	}
	var b strings.Builder
	if g := groupOf(k); g != "" {
		fmt.Fprintf(&b, "GROUP:      %s\n", g)
	}
	_, version, ok := strings.Cut(k.APIVersion, "/")
	if !ok {
		version = k.APIVersion
	}
	fmt.Fprintf(&b, "KIND:       %s\nVERSION:    %s\n\n", k.Name, version)
	if path != "" {
		fmt.Fprintf(&b, "FIELD: %s <%s>\n\n\n", fieldName, fieldType)
	}
	b.WriteString("DESCRIPTION:\n")
	if desc == "" {
		b.WriteString("    <empty>\n")
	} else {
		b.WriteString(indent(4, wrap(76, desc)) + "\n    \n")
	}
	if props := e.properties(s); len(props) > 0 {
		b.WriteString("FIELDS:\n")
		e.fields(&b, s, 2, recursive, nil)
		b.WriteString("\n")
	} else {
		b.WriteString("\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// fields writes the fields of s at an indent: with their descriptions, or
// (recursive) as a tree of names and types. seen stops a recursion through
// a schema already open above.
func (e explainer) fields(b *strings.Builder, s openapi.Schema, ind int, recursive bool, seen []string) {
	props := e.properties(s)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	pad := strings.Repeat(" ", ind)
	for _, n := range names {
		fs := props[n]
		fmt.Fprintf(b, "%s%s\t<%s>\n", pad, n, e.typeName(fs))
		if recursive {
			if ref := e.refOf(fs); ref != "" && !slices.Contains(seen, ref) {
				sub, _ := e.resolve(fs)
				e.fields(b, sub, ind+2, true, append(seen, ref))
			}
			continue
		}
		if d := str(fs["description"]); d != "" {
			b.WriteString(indent(ind+2, wrap(80-(ind+2), d)) + "\n\n")
		} else {
			b.WriteString(pad + "  <no description>\n\n")
		}
	}
}

// properties are the fields of an object schema.
func (e explainer) properties(s openapi.Schema) map[string]openapi.Schema {
	out := map[string]openapi.Schema{}
	if p, ok := s["properties"].(openapi.Schema); ok {
		for k, v := range p {
			if vs, ok := v.(openapi.Schema); ok {
				out[k] = vs
			}
		}
	}
	return out
}

// refOf is the definition a field's schema refers to (directly, through
// allOf, or through an array's items), "" for none.
func (e explainer) refOf(s openapi.Schema) string {
	if r, ok := s["$ref"].(string); ok {
		return r[strings.LastIndex(r, "/")+1:]
	}
	if all, ok := s["allOf"].([]openapi.Schema); ok && len(all) > 0 {
		return e.refOf(all[0])
	}
	if items, ok := s["items"].(openapi.Schema); ok {
		return e.refOf(items)
	}
	return ""
}

// resolve is the schema a field's value has (an array's element) and the
// description to show: the field's own, then its type's.
func (e explainer) resolve(fs openapi.Schema) (openapi.Schema, string) {
	desc := str(fs["description"])
	ref := e.refOf(fs)
	if ref == "" {
		if items, ok := fs["items"].(openapi.Schema); ok {
			return items, desc
		}
		return fs, desc
	}
	s := e.schemas[ref]
	if d := str(s["description"]); d != "" {
		if desc != "" {
			desc += "\n"
		}
		desc += d
	}
	return s, desc
}

// typeName is kubectl's name of a field's type: string, integer,
// boolean, []Container, map[string]string, ObjectMeta, Object.
func (e explainer) typeName(s openapi.Schema) string {
	if ref := e.refOf(s); ref != "" && s["type"] != "array" {
		return ref[strings.LastIndex(ref, ".")+1:]
	}
	switch t := str(s["type"]); t {
	case "array":
		if items, ok := s["items"].(openapi.Schema); ok {
			return "[]" + e.typeName(items)
		}
		return "[]Object"
	case "object":
		if ap, ok := s["additionalProperties"].(openapi.Schema); ok {
			return "map[string]" + e.typeName(ap)
		}
		return "Object"
	case "":
		return "Object"
	default:
		return t
	}
}

func groupOf(k *kinds.Kind) string {
	if g, _, ok := strings.Cut(k.APIVersion, "/"); ok {
		return g
	}
	return ""
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// indent puts n spaces before every line of s.
func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// wrap breaks s into lines of at most width runes at spaces, keeping the
// line breaks s has (a word longer than width stays whole), as kubectl's
// word wrap does.
func wrap(width int, s string) string {
	var out strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			out.WriteByte('\n')
		}
		col := 0
		// Keep the line's leading spaces; break between words after that.
		lead := len(line) - len(strings.TrimLeftFunc(line, unicode.IsSpace))
		out.WriteString(line[:lead])
		col = lead
		for j, word := range strings.Fields(line[lead:]) {
			n := len([]rune(word))
			switch {
			case j == 0:
			case col+1+n > width:
				out.WriteByte('\n')
				col = 0
			default:
				out.WriteByte(' ')
				col++
			}
			out.WriteString(word)
			col += n
		}
	}
	return out.String()
}
