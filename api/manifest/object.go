package manifest

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/tugboat/tugboat/api/apierrors"
)

// ObjectOptions adjust DecodeObject.
type ObjectOptions struct {
	// IgnoreUnknown drops fields the kind does not have instead of
	// refusing the object; DecodeObject returns their paths.
	IgnoreUnknown bool
	// APIVersion and Kind stand in for a body that leaves them out (the
	// HTTP door knows them from the URL, as kube-apiserver does).
	APIVersion, Kind string
}

// DecodeObject decodes one JSON object (an API request's body, a patched
// object) with the same walk as Decode, so both doors accept and refuse
// the same fields. Errors wrap apierrors sentinels: ErrBadRequest for a
// body that is not a JSON object, ErrInvalid with one field error per
// problem otherwise (unknown fields, wrong types, an unknown kind). unknown
// lists the fields dropped under IgnoreUnknown.
func DecodeObject(data []byte, opts ObjectOptions) (obj Object, unknown []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return Object{}, nil, apierrors.New(apierrors.ErrBadRequest, "%s", jsonError(err, data))
	}
	if dec.More() {
		return Object{}, nil, apierrors.New(apierrors.ErrBadRequest, "invalid JSON: more than one value in the body")
	}
	top, ok := raw.(map[string]any)
	if !ok {
		return Object{}, nil, apierrors.New(apierrors.ErrBadRequest, "the body must be a JSON object with apiVersion and kind, got %s", describe(raw))
	}
	if _, ok := top["apiVersion"]; !ok && opts.APIVersion != "" {
		top["apiVersion"] = opts.APIVersion
	}
	if _, ok := top["kind"]; !ok && opts.Kind != "" {
		top["kind"] = opts.Kind
	}
	w := &walker{ignoreUnknown: opts.IgnoreUnknown}
	o, errs := decodeObjectWith(w, Source{File: "body", Document: 1}, top)
	if len(errs) > 0 {
		return Object{}, nil, fieldErrors(errs)
	}
	return *o, w.unknown, nil
}

// fieldErrors turns the walk's errors into one ErrInvalid naming each.
func fieldErrors(errs []error) error {
	var fes apierrors.FieldErrors
	kind, name := "object", ""
	for _, err := range errs {
		var e *Error
		if !errors.As(err, &e) {
			fes.Add("", "%v", err)
			continue
		}
		if e.Kind != "" {
			kind, name = e.Kind, e.Name
		}
		fes = append(fes, apierrors.FieldError{Path: e.Path, Msg: e.Msg})
	}
	return fes.Err(kind, name)
}
