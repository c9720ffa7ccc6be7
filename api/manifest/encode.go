package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Format is an output encoding.
type Format int

const (
	YAML Format = iota
	JSON
)

// ParseFormat reads "yaml" or "json".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "yaml":
		return YAML, nil
	case "json":
		return JSON, nil
	}
	return 0, fmt.Errorf("format %q: want yaml or json", s)
}

// Marshal encodes obj in the Kubernetes shape: apiVersion and kind first,
// then metadata and the kind's other fields by their JSON names, nested keys
// sorted. Integers print as numbers except metadata.resourceVersion, which
// prints as a string as in Kubernetes. Unset fields are omitted.
//
// Fields marked int_or_string in the .proto files (targetPort, maxSurge, a
// probe's port) are strings in the API and print as numbers when they hold
// an integer (targetPort: 80, maxSurge: "25%"), as Kubernetes' IntOrString
// does, so client-go decodes them. Quantities (cpu: "1") stay strings, as
// in Kubernetes. Decode reads either form, so output round-trips.
func Marshal(obj v1.Object, f Format) ([]byte, error) {
	m, err := ToMap(obj)
	if err != nil {
		return nil, err
	}
	return encode(m, []string{"apiVersion", "kind", "metadata"}, f)
}

// MarshalMap encodes an object's map (ToMap's result, perhaps changed:
// diff masks a Secret's values) as Marshal encodes the object.
func MarshalMap(m map[string]any, f Format) ([]byte, error) {
	return encode(m, []string{"apiVersion", "kind", "metadata"}, f)
}

// MarshalList encodes objects as a Kubernetes List (apiVersion v1, kind
// List, items), the shape of `get -o yaml` for several objects. Decode reads
// it back.
func MarshalList(objs []v1.Object, f Format) ([]byte, error) {
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		m, err := ToMap(o)
		if err != nil {
			return nil, err
		}
		items = append(items, ordered{m: m, first: []string{"apiVersion", "kind", "metadata"}})
	}
	list := map[string]any{
		"apiVersion": "v1",
		"kind":       "List",
		"items":      items,
		"metadata":   map[string]any{"resourceVersion": ""},
	}
	return encode(list, []string{"apiVersion", "kind", "metadata", "items"}, f)
}

// MarshalValue encodes one JSON-shaped value (a part of ToMap's result) as
// YAML, keys sorted: for printing a field on its own.
func MarshalValue(v any) ([]byte, error) {
	return yaml.Marshal(toYAML(v))
}

// ToMap returns obj as a JSON-shaped map (strings, json.Number, bool,
// []any, map[string]any) with apiVersion and kind set.
func ToMap(obj v1.Object) (map[string]any, error) {
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return nil, err
	}
	return MessageToMap(obj, k.APIVersion, k.Name)
}

// MessageToMap is ToMap for a message that is not a stored kind (a
// subresource's body, kinds.Subresource), with the apiVersion and kind
// given.
func MessageToMap(msg proto.Message, apiVersion, kind string) (map[string]any, error) {
	j, err := protojson.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", kind, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", kind, err)
	}
	if m == nil {
		m = map[string]any{}
	}
	integers(msg.ProtoReflect().Descriptor(), m, "")
	m["apiVersion"] = apiVersion
	m["kind"] = kind
	return m, nil
}

// integers turns protojson's quoted 64-bit integers back into numbers, as
// Kubernetes prints them, except resourceVersions, and
// int-or-string fields that hold an integer into numbers. It also puts
// back the zero scalars Kubernetes always prints (emit_zero fields:
// restartCount: 0, ready: false), which protojson leaves out.
func integers(md protoreflect.MessageDescriptor, m map[string]any, path string) {
	for key, v := range m {
		fd := md.Fields().ByJSONName(key)
		if fd == nil {
			continue
		}
		p := join(path, key)
		switch {
		case fd.IsMap():
			if vm, ok := v.(map[string]any); ok {
				for mk, mv := range vm {
					vm[mk] = integerValue(fd.MapValue(), mv, p)
				}
			}
		case fd.IsList():
			if arr, ok := v.([]any); ok {
				for i := range arr {
					arr[i] = integerValue(fd, arr[i], p)
				}
			}
		default:
			m[key] = integerValue(fd, v, p)
		}
	}
	for _, fd := range emitZero(md) {
		if _, ok := m[fd.JSONName()]; !ok {
			m[fd.JSONName()] = zeroValue(fd)
		}
	}
}

// emitZero lists md's emit_zero fields, worked out once per message type.
func emitZero(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	if fds, ok := emitZeroFields.Load(md.FullName()); ok {
		return fds.([]protoreflect.FieldDescriptor)
	}
	var fds []protoreflect.FieldDescriptor
	for i := range md.Fields().Len() {
		if fd := md.Fields().Get(i); v1.EmitsZero(fd) {
			fds = append(fds, fd)
		}
	}
	emitZeroFields.Store(md.FullName(), fds)
	return fds
}

var emitZeroFields sync.Map // protoreflect.FullName -> []protoreflect.FieldDescriptor

// zeroValue is how an unset emit_zero scalar prints: 0, false or "".
func zeroValue(fd protoreflect.FieldDescriptor) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return false
	case protoreflect.StringKind, protoreflect.EnumKind, protoreflect.BytesKind:
		return ""
	default:
		return json.Number("0")
	}
}

func integerValue(fd protoreflect.FieldDescriptor, v any, path string) any {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		if sub, ok := v.(map[string]any); ok {
			integers(fd.Message(), sub, path)
		}
	case protoreflect.StringKind:
		if s, ok := v.(string); ok && v1.IsIntOrString(fd) && intOrStringNumber.MatchString(s) {
			return json.Number(s)
		}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		// Every resourceVersion is a string in Kubernetes (metadata's, an
		// ObjectReference's): an opaque token, not a number to compute with.
		if s, ok := v.(string); ok && fd.Name() != "resource_version" {
			return json.Number(s)
		}
	}
	return v
}

// intOrStringNumber is an int-or-string value that prints as a number: an
// int32 without sign or leading zeros, as Kubernetes' IntOrString holds.
var intOrStringNumber = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})$`)

// ordered is a map that encodes with some keys first and the rest sorted.
type ordered struct {
	m     map[string]any
	first []string
}

func (o ordered) keys() []string {
	seen := map[string]bool{}
	var keys []string
	for _, k := range o.first {
		if _, ok := o.m[k]; ok {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	var rest []string
	for k := range o.m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// MarshalJSON writes the keys in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys() {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.m[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func encode(m map[string]any, first []string, f Format) ([]byte, error) {
	top := ordered{m: m, first: first}
	if f == JSON {
		out, err := json.MarshalIndent(top, "", "    ")
		if err != nil {
			return nil, err
		}
		return append(out, '\n'), nil
	}
	return yaml.Marshal(toYAML(top))
}

// toYAML converts a JSON-shaped value into yaml.v2 values that keep key
// order and print numbers as numbers.
func toYAML(v any) any {
	switch v := v.(type) {
	case ordered:
		out := make(yaml.MapSlice, 0, len(v.m))
		for _, k := range v.keys() {
			out = append(out, yaml.MapItem{Key: k, Value: toYAML(v.m[k])})
		}
		return out
	case map[string]any:
		return toYAML(ordered{m: v})
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = toYAML(v[i])
		}
		return out
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return u
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return string(v)
	}
	return v
}
