package manifest

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// A ControllerRevision's data is, as in Kubernetes, the strategic merge
// patch that puts the revision's pod template back into its DaemonSet or
// StatefulSet: {"spec":{"template":{...,"$patch":"replace"}}}, the
// template in its Kubernetes JSON shape. kubectl rollout history applies
// it to show the template and rollout undo sends it as a patch of the
// owner; the controllers write it (RevisionData) and tugctl reads the
// template back (RevisionTemplate).

// RevisionData is the data of a revision of template.
func RevisionData(template *v1.PodTemplateSpec) (*structpb.Struct, error) {
	t, err := messageJSON(template)
	if err != nil {
		return nil, fmt.Errorf("encoding the revision's template: %w", err)
	}
	t["$patch"] = "replace"
	data, err := structpb.NewStruct(map[string]any{"spec": map[string]any{"template": t}})
	if err != nil {
		return nil, fmt.Errorf("encoding the revision's template: %w", err)
	}
	return data, nil
}

// RevisionTemplate reads the pod template out of a revision's data. Data
// of another shape (a ControllerRevision some other client made) is an
// error naming what is missing or wrong, under "data".
func RevisionTemplate(data *structpb.Struct) (*v1.PodTemplateSpec, error) {
	if data == nil {
		return nil, fmt.Errorf("data: required")
	}
	m := data.AsMap()
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data.spec: expected a patch of spec.template, got %s", describe(m["spec"]))
	}
	raw, ok := spec["template"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data.spec.template: expected a pod template, got %s", describe(spec["template"]))
	}
	t := make(map[string]any, len(raw))
	for k, v := range raw {
		if k != "$patch" {
			t[k] = v
		}
	}
	// structpb holds numbers as float64: back to JSON numbers, which the
	// walk checks as it checks a manifest's.
	j, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("data.spec.template: %w", err)
	}
	v, err := decodeJSON(j)
	if err != nil {
		return nil, fmt.Errorf("data.spec.template: %w", err)
	}
	out := &v1.PodTemplateSpec{}
	w := &walker{}
	norm := w.message(out.ProtoReflect().Descriptor(), v, "data.spec.template")
	if len(w.errs) > 0 {
		msgs := make([]string, len(w.errs))
		for i, e := range w.errs {
			msgs[i] = e.path + ": " + e.msg
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	nj, err := json.Marshal(norm)
	if err != nil {
		return nil, fmt.Errorf("data.spec.template: %w", err)
	}
	if err := protojson.Unmarshal(nj, out); err != nil {
		return nil, fmt.Errorf("data.spec.template: %s", strings.TrimPrefix(err.Error(), "proto: "))
	}
	return out, nil
}

// messageJSON is a message in its Kubernetes JSON shape, as ToMap makes
// an object's (integers as numbers, int-or-string fields holding an
// integer as numbers).
func messageJSON(msg *v1.PodTemplateSpec) (map[string]any, error) {
	m, err := MessageToMap(msg, "", "")
	if err != nil {
		return nil, err
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	return m, nil // structpb takes json.Number

}
