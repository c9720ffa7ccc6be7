// Package fields parses field selectors ("spec.nodeName=n1,status.phase!=Failed")
// and evaluates them against any API object by walking its protobuf fields by
// their JSON names, so every kind supports every scalar field path without
// per-kind code.
package fields

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Requirement is "path=value" or "path!=value".
type Requirement struct {
	Path   string
	Negate bool
	Value  string
}

// Selector is a conjunction of requirements; empty matches everything.
type Selector []Requirement

// Parse reads "a.b=v,c!=w" ("==" is accepted for "=").
func Parse(s string) (Selector, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var sel Selector
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		var r Requirement
		switch {
		case strings.Contains(term, "!="):
			i := strings.Index(term, "!=")
			r = Requirement{Path: term[:i], Negate: true, Value: term[i+2:]}
		case strings.Contains(term, "=="):
			i := strings.Index(term, "==")
			r = Requirement{Path: term[:i], Value: term[i+2:]}
		case strings.Contains(term, "="):
			i := strings.Index(term, "=")
			r = Requirement{Path: term[:i], Value: term[i+1:]}
		default:
			return nil, fmt.Errorf("field selector %q: term %q has no '=' or '!='", s, term)
		}
		r.Path = strings.TrimSpace(r.Path)
		r.Value = strings.TrimSpace(r.Value)
		if r.Path == "" {
			return nil, fmt.Errorf("field selector %q: empty field name", s)
		}
		sel = append(sel, r)
	}
	return sel, nil
}

// Validate checks that every path names a scalar field of msg's type.
func (s Selector) Validate(msg proto.Message) error {
	for _, r := range s {
		if _, err := lookup(msg.ProtoReflect().Descriptor(), r.Path); err != nil {
			return err
		}
	}
	return nil
}

// Matches reports whether obj satisfies every requirement. Paths that do
// not exist compare as the empty string (Validate refuses them up front).
func (s Selector) Matches(obj proto.Message) bool {
	for _, r := range s {
		v, _ := Value(obj, r.Path)
		if (v == r.Value) == r.Negate {
			return false
		}
	}
	return true
}

// Get returns the value at path for the requirement with that path, if the
// selector pins it with "=" (used to narrow watches, e.g. spec.nodeName).
func (s Selector) Get(path string) (string, bool) {
	for _, r := range s {
		if r.Path == path && !r.Negate {
			return r.Value, true
		}
	}
	return "", false
}

func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		op := "="
		if r.Negate {
			op = "!="
		}
		parts[i] = r.Path + op + r.Value
	}
	return strings.Join(parts, ",")
}

// Value returns the string form of the scalar at a JSON-name path such as
// "spec.nodeName" or "metadata.name".
func Value(obj proto.Message, path string) (string, error) {
	m := obj.ProtoReflect()
	parts := strings.Split(path, ".")
	for i, p := range parts {
		fd := fieldByJSONName(m.Descriptor(), p)
		if fd == nil {
			return "", fmt.Errorf("field selector: %q is not a field of %s", path, obj.ProtoReflect().Descriptor().Name())
		}
		if i < len(parts)-1 {
			if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() {
				return "", fmt.Errorf("field selector: %q is not a scalar field path", path)
			}
			if !m.Has(fd) {
				return "", nil
			}
			m = m.Get(fd).Message()
			continue
		}
		if fd.IsList() || fd.IsMap() || fd.Kind() == protoreflect.MessageKind {
			return "", fmt.Errorf("field selector: %q is not a scalar field", path)
		}
		v := m.Get(fd)
		if fd.Kind() == protoreflect.BoolKind {
			return fmt.Sprint(v.Bool()), nil
		}
		return v.String(), nil
	}
	return "", nil
}

func lookup(md protoreflect.MessageDescriptor, path string) (protoreflect.FieldDescriptor, error) {
	parts := strings.Split(path, ".")
	var fd protoreflect.FieldDescriptor
	for i, p := range parts {
		fd = fieldByJSONName(md, p)
		if fd == nil {
			return nil, fmt.Errorf("field selector: %q is not a field of %s", path, md.Name())
		}
		if i < len(parts)-1 {
			if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() {
				return nil, fmt.Errorf("field selector: %q is not a scalar field path", path)
			}
			md = fd.Message()
		}
	}
	if fd.IsList() || fd.IsMap() || fd.Kind() == protoreflect.MessageKind {
		return nil, fmt.Errorf("field selector: %q is not a scalar field", path)
	}
	return fd, nil
}

func fieldByJSONName(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByJSONName(name); fd != nil {
		return fd
	}
	return md.Fields().ByName(protoreflect.Name(name))
}
