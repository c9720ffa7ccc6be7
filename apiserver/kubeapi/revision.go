package kubeapi

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// A ControllerRevision's data as kubectl compares it. Before `kubectl
// rollout undo` of a StatefulSet or DaemonSet, kubectl makes the patch
// {"spec":{"template":{...,"$patch":"replace"}}} from the live object
// through k8s.io/api's Go types (so "resources":{} and the other fields
// those types always print, and in kubectl v1.32, the API release
// Tugboat serves, "metadata":{"creationTimestamp":null}) and
// skips the rollback ("skipped rollback (current template already
// matches revision N)") only if it is byte for byte the revision's data
// as the server sent it. Kubernetes' controllers make the data with the
// same types, so it matches; Tugboat's data is the template in the
// manifest codec's shape. The door therefore writes data of that shape
// as kubectl would make it: the template through corev1.PodTemplateSpec,
// then through a map (sorted keys), compact. Data of any other shape is
// written as stored; the stored object is never changed.
func kubectlRevisionData(data any) (json.RawMessage, bool) {
	m, ok := data.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	spec, ok := m["spec"].(map[string]any)
	if !ok || len(spec) != 1 {
		return nil, false
	}
	tmpl, ok := spec["template"].(map[string]any)
	if !ok || tmpl["$patch"] != "replace" {
		return nil, false
	}
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return nil, false
	}
	var typed corev1.PodTemplateSpec
	if err := json.Unmarshal(raw, &typed); err != nil {
		return nil, false
	}
	b, err := json.Marshal(typed)
	if err != nil {
		return nil, false
	}
	var t map[string]any
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, false
	}
	// v1.32's types, the release served, print a template's zero
	// creationTimestamp as null (k8s.io/api since v0.34 leaves it out).
	if md, ok := t["metadata"].(map[string]any); ok {
		if _, ok := md["creationTimestamp"]; !ok {
			md["creationTimestamp"] = nil
		}
	}
	t["$patch"] = "replace"
	out, err := json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
	if err != nil {
		return nil, false
	}
	return out, true
}
