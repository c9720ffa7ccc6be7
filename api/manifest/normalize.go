package manifest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// walker checks a JSON value against a protobuf descriptor and returns it in
// the form protojson accepts. It is generic: no kind or field is named here.
//
//   - a number where the field is a string becomes that string: quantities
//     (cpu: 1) and int-or-string fields (targetPort: 80, maxSurge: 1);
//   - a string holding an integer where the field is an integer becomes a
//     number (replicas: "3");
//   - null anywhere is dropped (creationTimestamp: null, ports: null);
//   - an unknown field or a value of the wrong type is recorded with its
//     path, in the JSON names users write.
type walker struct {
	errs    []fieldErr
	dropped int
	// ignoreUnknown drops unknown fields instead of failing, recording
	// their paths in unknown (the HTTP door's fieldValidation=Ignore).
	ignoreUnknown bool
	unknown       []string
}

type fieldErr struct{ path, msg string }

func (w *walker) fail(path, format string, args ...any) {
	if len(w.errs) >= maxErrorsPerDocument {
		w.dropped++
		return
	}
	w.errs = append(w.errs, fieldErr{path, fmt.Sprintf(format, args...)})
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// message normalizes a JSON object for message md. v is never nil here.
func (w *walker) message(md protoreflect.MessageDescriptor, v any, path string) any {
	if md.FullName() == "google.protobuf.Timestamp" {
		s, ok := v.(string)
		if !ok {
			w.fail(path, "expected an RFC 3339 time such as \"2024-05-01T10:00:00Z\", got %s", describe(v))
			return nil
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			w.fail(path, "%q is not an RFC 3339 time such as \"2024-05-01T10:00:00Z\"", truncate(s))
			return nil
		}
		return s
	}
	obj, ok := v.(map[string]any)
	if !ok {
		w.fail(path, "expected a mapping, got %s", describe(v))
		return nil
	}
	if md.FullName() == "google.protobuf.Struct" {
		// Free-form JSON (managedFields' fieldsV1): protojson reads it.
		return obj
	}
	fields := md.Fields()
	out := make(map[string]any, len(obj))
	for key, val := range obj {
		p := join(path, key)
		fd := fields.ByJSONName(key)
		if fd == nil {
			switch {
			case isZero(val):
				// An unset field that Tugboat lacks, written out by a
				// client that prints zero values (client-go's Go structs:
				// "resources": {}, "port": 0): it sets nothing.
			case w.ignoreUnknown:
				w.unknown = append(w.unknown, p)
			default:
				w.fail(p, "%s", unknownField(md, key))
			}
			continue
		}
		if val == nil {
			continue
		}
		if nv, ok := w.field(fd, val, p); ok {
			out[key] = nv
		}
	}
	return out
}

// isZero reports whether a JSON value is a zero value: null, "", 0, false,
// or a list or mapping of zero values.
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case []any:
		for _, e := range v {
			if !isZero(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if !isZero(e) {
				return false
			}
		}
		return true
	}
	return false
}

func unknownField(md protoreflect.MessageDescriptor, key string) string {
	names := make([]string, md.Fields().Len())
	for i := range names {
		names[i] = md.Fields().Get(i).JSONName()
	}
	if s := suggest(key, names); s != "" {
		return fmt.Sprintf("unknown field (did you mean %q?)", s)
	}
	return "unknown field"
}

// field normalizes the value of one field; ok is false when it is dropped.
func (w *walker) field(fd protoreflect.FieldDescriptor, v any, path string) (any, bool) {
	switch {
	case fd.IsMap():
		obj, ok := v.(map[string]any)
		if !ok {
			w.fail(path, "expected a mapping, got %s", describe(v))
			return nil, false
		}
		out := make(map[string]any, len(obj))
		for k, val := range obj {
			if val == nil {
				continue
			}
			if !w.mapKey(fd.MapKey(), k, path) {
				continue
			}
			if nv, ok := w.single(fd.MapValue(), val, join(path, k)); ok {
				out[k] = nv
			}
		}
		return out, true
	case fd.IsList():
		arr, ok := v.([]any)
		if !ok {
			w.fail(path, "expected a list, got %s", describe(v))
			return nil, false
		}
		out := make([]any, 0, len(arr))
		for i, val := range arr {
			p := fmt.Sprintf("%s[%d]", path, i)
			if val == nil {
				w.fail(p, "null is not allowed in a list")
				continue
			}
			if nv, ok := w.single(fd, val, p); ok {
				out = append(out, nv)
			}
		}
		return out, true
	}
	return w.single(fd, v, path)
}

func (w *walker) mapKey(fd protoreflect.FieldDescriptor, k, path string) bool {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return true
	case protoreflect.BoolKind:
		if k == "true" || k == "false" {
			return true
		}
	default:
		if _, err := strconv.ParseInt(k, 10, 64); err == nil {
			return true
		}
	}
	w.fail(join(path, k), "key is not a valid %s", fd.Kind())
	return false
}

// single normalizes one value (not a list or map) of field fd.
func (w *walker) single(fd protoreflect.FieldDescriptor, v any, path string) (any, bool) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		nv := w.message(fd.Message(), v, path)
		return nv, nv != nil
	case protoreflect.StringKind:
		switch v := v.(type) {
		case string:
			return v, true
		case json.Number:
			return v.String(), true
		case bool:
			w.fail(path, "expected a string, got the boolean %v (quote it: \"%v\")", v, v)
		default:
			w.fail(path, "expected a string, got %s", describe(v))
		}
	case protoreflect.BytesKind:
		s, ok := v.(string)
		if !ok {
			w.fail(path, "expected a base64 string, got %s", describe(v))
			return nil, false
		}
		if !isBase64(s) {
			w.fail(path, "%q is not valid base64", truncate(s))
			return nil, false
		}
		return s, true
	case protoreflect.BoolKind:
		if b, ok := v.(bool); ok {
			return b, true
		}
		w.fail(path, "expected true or false, got %s", describe(v))
	case protoreflect.EnumKind:
		switch v.(type) {
		case string, json.Number:
			return v, true
		}
		w.fail(path, "expected one of the names of %s, got %s", fd.Enum().Name(), describe(v))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if n, ok := number(v); ok {
			if _, err := strconv.ParseFloat(n, 64); err == nil {
				return json.Number(n), true
			}
		}
		w.fail(path, "expected a number, got %s", describe(v))
	default:
		return w.integer(fd, v, path)
	}
	return nil, false
}

// integer checks an integer field's value: a number or a string holding one,
// whole and in range.
func (w *walker) integer(fd protoreflect.FieldDescriptor, v any, path string) (any, bool) {
	n, ok := number(v)
	if !ok {
		w.fail(path, "expected an integer, got %s", describe(v))
		return nil, false
	}
	lo, hi, unsigned := intRange(fd.Kind())
	if unsigned {
		u, err := strconv.ParseUint(n, 10, 64)
		if err != nil || u > uint64(hi) {
			w.fail(path, "expected an integer between 0 and %d, got %s", uint64(hi), truncate(n))
			return nil, false
		}
		return json.Number(strconv.FormatUint(u, 10)), true
	}
	i, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		// Accept whole floats such as 3.0 or 1e3.
		f, ferr := strconv.ParseFloat(n, 64)
		if ferr != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
			w.fail(path, "expected an integer, got %s", truncate(n))
			return nil, false
		}
		i = int64(f)
	}
	if i < lo || (!unsigned && i > int64(hi)) {
		w.fail(path, "%d is out of range (%d to %d)", i, lo, int64(hi))
		return nil, false
	}
	return json.Number(strconv.FormatInt(i, 10)), true
}

// number returns the text of a JSON number, or of a string holding one.
func number(v any) (string, bool) {
	switch v := v.(type) {
	case json.Number:
		return v.String(), true
	case string:
		if s := strings.TrimSpace(v); jsonNumberRE.MatchString(s) {
			return s, true
		}
	}
	return "", false
}

var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

func intRange(k protoreflect.Kind) (lo int64, hi uint64, unsigned bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return math.MinInt32, math.MaxInt32, false
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return 0, math.MaxUint32, true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return 0, math.MaxUint64, true
	default:
		return math.MinInt64, math.MaxInt64, false
	}
}

// isBase64 accepts what protojson accepts: standard or URL alphabet, padded
// or not.
func isBase64(s string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if _, err := enc.DecodeString(s); err == nil {
			return true
		}
	}
	return false
}
