// Package manifest reads and writes Kubernetes-shaped manifests: YAML or
// JSON documents with apiVersion, kind, metadata and spec, as users paste
// them from the Kubernetes docs.
//
// Decoding: the input is split into documents (YAML "---" separators, a
// stream of JSON values, and "kind: List" items), each document is converted
// to JSON with sigs.k8s.io/yaml, its apiVersion and kind are resolved through
// kinds.ForManifest, and the rest is walked alongside the kind's protobuf
// descriptor (see normalize.go) before protojson fills the kind's message.
// The walk is what makes pasted manifests work unchanged and what makes
// errors precise: numbers given for string fields (cpu: 1, targetPort: 80)
// become strings, nulls are dropped (creationTimestamp: null), and an unknown
// field or a value of the wrong type is an *Error naming the file, the
// document, the object and the field path.
//
// Contract: Decode never returns a partial result with a nil error, never
// panics on any input (FuzzDecode), and a decoded object re-encoded by
// Marshal decodes to an equal message. Decoding does not default or
// validate: the apiserver does both.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Object is one decoded object with the kind it resolved to and where it
// came from.
type Object struct {
	Object v1.Object
	Kind   *kinds.Kind
	Source Source
}

// Source locates a document: the file as given, the 1-based index of the
// non-empty document in it, and the 1-based item index when the document is
// a List (0 otherwise).
type Source struct {
	File     string
	Document int
	Item     int
}

func (s Source) String() string {
	out := fmt.Sprintf("%s: document %d", s.File, s.Document)
	if s.Item > 0 {
		out += fmt.Sprintf(" item %d", s.Item)
	}
	return out
}

// maxErrorsPerDocument bounds the field errors reported for one document.
const maxErrorsPerDocument = 20

// DecodeReader reads all of r and decodes it as Decode does.
func DecodeReader(file string, r io.Reader) ([]Object, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return Decode(file, data)
}

// Decode decodes every document in data. file names the input in errors
// ("web.yaml", "<stdin>"). On error it returns no objects and an error that
// joins one *Error per problem found, in document order.
func Decode(file string, data []byte) ([]Object, error) {
	out, err := DecodeEach(file, data)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeEach decodes every document in data as Decode does, but returns
// the objects of the documents that decode beside the error that joins
// one *Error per problem in the others (a document with a problem gives no
// object; a List item with one gives none, its good siblings do), as
// kubectl apply goes on past a document it cannot read. Input that cannot
// be cut into documents at all (a JSON stream broken midway) gives no
// objects.
func DecodeEach(file string, data []byte) ([]Object, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	docs, err := split(file, data)
	if err != nil {
		return nil, err
	}
	var out []Object
	var errs []error
	n := 0
	for _, d := range docs {
		var raw any
		if d.json != nil {
			raw = d.json
		} else {
			j, err := yaml.YAMLToJSONStrict(d.yaml)
			if err != nil {
				n++
				errs = append(errs, &Error{Source: Source{File: file, Document: n}, Msg: yamlError(err, d.line)})
				continue
			}
			if raw, err = decodeJSON(j); err != nil {
				n++
				errs = append(errs, &Error{Source: Source{File: file, Document: n}, Msg: err.Error()})
				continue
			}
		}
		if raw == nil {
			continue // an empty document: comments only, or a bare "---"
		}
		n++
		objs, derrs := decodeDocument(Source{File: file, Document: n}, raw)
		out = append(out, objs...)
		errs = append(errs, derrs...)
	}
	return out, errors.Join(errs...)
}

// document is one chunk of input: YAML text starting at line, or an already
// parsed JSON value.
type document struct {
	yaml []byte
	line int
	json any
}

// split cuts the input into documents. Input whose first non-blank byte is
// '{' or '[' is a stream of JSON values, unless it does not parse as JSON
// and its first key is not quoted: a YAML flow mapping ("{apiVersion: v1,
// kind: Pod, ...}", as the Kubernetes docs write some examples). Anything
// else is YAML separated by "---" lines.
func split(file string, data []byte) ([]document, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		docs, err := splitJSON(file, data)
		if err == nil || !flowMapping(trimmed) {
			return docs, err
		}
	}
	return splitYAML(data), nil
}

// flowMapping says input that is not JSON is meant as YAML: a mapping
// whose first key is not a JSON string ("{apiVersion: v1").
func flowMapping(trimmed []byte) bool {
	rest := bytes.TrimLeft(trimmed[1:], " \t\r\n")
	return trimmed[0] == '{' && len(rest) > 0 && rest[0] != '"'
}

// splitYAML cuts YAML input at its "---" lines.
func splitYAML(data []byte) []document {
	var docs []document
	start, startLine, line := 0, 1, 1
	for i := 0; i <= len(data); {
		end := bytes.IndexByte(data[i:], '\n')
		next := len(data) + 1
		if end >= 0 {
			next = i + end + 1
		}
		l := data[i:min(next, len(data))]
		if isSeparator(l) {
			docs = append(docs, document{yaml: data[start:i], line: startLine})
			start, startLine = min(next, len(data)), line+1
		}
		i = next
		line++
	}
	docs = append(docs, document{yaml: data[start:], line: startLine})
	return docs
}

// isSeparator reports whether a line is a YAML document separator: "---"
// alone or followed by a space or comment.
func isSeparator(line []byte) bool {
	line = bytes.TrimRight(line, "\r\n")
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := line[3:]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t'
}

func splitJSON(file string, data []byte) ([]document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var docs []document
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, &Error{Source: Source{File: file, Document: len(docs) + 1}, Msg: jsonError(err, data)}
		}
		if arr, ok := v.([]any); ok {
			// A top-level array is a list of documents.
			for _, item := range arr {
				docs = append(docs, document{json: item})
			}
			continue
		}
		docs = append(docs, document{json: v})
	}
}

func decodeJSON(j []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	return v, nil
}

// decodeDocument turns one parsed document into objects: one, or the items
// of a List.
func decodeDocument(src Source, raw any) ([]Object, []error) {
	top, ok := raw.(map[string]any)
	if !ok {
		return nil, []error{&Error{Source: src, Msg: fmt.Sprintf("a document must be a mapping with apiVersion and kind, got %s", describe(raw))}}
	}
	if kind, _ := top["kind"].(string); kind == "List" || strings.HasSuffix(kind, "List") && top["items"] != nil {
		return decodeList(src, top)
	}
	obj, errs := decodeObject(src, top)
	if obj == nil {
		return nil, errs
	}
	return []Object{*obj}, nil
}

func decodeList(src Source, top map[string]any) ([]Object, []error) {
	var errs []error
	for k := range top {
		switch k {
		case "apiVersion", "kind", "metadata", "items":
		default:
			errs = append(errs, &Error{Source: src, Kind: "List", Path: k, Msg: "unknown field"})
		}
	}
	items, ok := top["items"].([]any)
	if top["items"] != nil && !ok {
		errs = append(errs, &Error{Source: src, Kind: "List", Path: "items", Msg: "expected a list, got " + describe(top["items"])})
	}
	var out []Object
	for i, it := range items {
		isrc := src
		isrc.Item = i + 1
		m, ok := it.(map[string]any)
		if !ok {
			errs = append(errs, &Error{Source: isrc, Msg: "a List item must be a mapping with apiVersion and kind, got " + describe(it)})
			continue
		}
		obj, ierrs := decodeObject(isrc, m)
		errs = append(errs, ierrs...)
		if obj != nil {
			out = append(out, *obj)
		}
	}
	return out, errs
}

// decodeObject resolves the kind of one object and fills its message.
func decodeObject(src Source, top map[string]any) (*Object, []error) {
	return decodeObjectWith(&walker{}, src, top)
}

func decodeObjectWith(w *walker, src Source, top map[string]any) (*Object, []error) {
	e := &Error{Source: src}
	if md, ok := top["metadata"].(map[string]any); ok {
		e.Name, _ = md["name"].(string)
	}
	apiVersion, avOK := top["apiVersion"].(string)
	kind, kindOK := top["kind"].(string)
	e.Kind = kind
	switch {
	case top["kind"] == nil:
		return nil, []error{e.at("kind", "required")}
	case !kindOK:
		return nil, []error{e.at("kind", "expected a string, got "+describe(top["kind"]))}
	case top["apiVersion"] == nil:
		return nil, []error{e.at("apiVersion", "required")}
	case !avOK:
		return nil, []error{e.at("apiVersion", "expected a string, got "+describe(top["apiVersion"]))}
	}
	k, err := kinds.ForManifest(apiVersion, kind)
	if err != nil {
		// ForManifest's message starts with the field it is about.
		path, msg, _ := strings.Cut(err.Error(), ": ")
		return nil, []error{e.at(path, msg)}
	}
	body := make(map[string]any, len(top))
	for key, v := range top {
		if key != "apiVersion" && key != "kind" {
			body[key] = v
		}
	}
	obj := k.New()
	norm := w.message(obj.ProtoReflect().Descriptor(), body, "")
	if len(w.errs) > 0 {
		errs := make([]error, len(w.errs))
		for i, fe := range w.errs {
			errs[i] = e.at(fe.path, fe.msg)
		}
		if w.dropped > 0 {
			errs = append(errs, e.at("", fmt.Sprintf("and %d more errors", w.dropped)))
		}
		return nil, errs
	}
	j, err := json.Marshal(norm)
	if err != nil {
		return nil, []error{e.at("", err.Error())}
	}
	if err := protojson.Unmarshal(j, obj); err != nil {
		// The walk checks types, so this is rare (e.g. a malformed timestamp).
		return nil, []error{e.at("", strings.TrimPrefix(err.Error(), "proto: "))}
	}
	return &Object{Object: obj, Kind: k, Source: src}, nil
}

var yamlLineRE = regexp.MustCompile(`\bline (\d+)`)

// yamlError flattens a YAML error to one line and rewrites its line numbers,
// relative to the document, into lines of the file.
func yamlError(err error, firstLine int) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	msg = strings.Join(strings.Fields(msg), " ")
	msg = yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(m[len("line "):])
		return fmt.Sprintf("line %d", n+firstLine-1)
	})
	return "invalid YAML: " + msg
}

// jsonError names the line of a JSON syntax error.
func jsonError(err error, data []byte) string {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset <= int64(len(data)) {
		line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
		return fmt.Sprintf("invalid JSON: line %d: %v", line, se)
	}
	return "invalid JSON: " + err.Error()
}
