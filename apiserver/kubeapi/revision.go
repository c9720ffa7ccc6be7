package kubeapi

import (
	"encoding/json"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// ControllerRevisions in Kubernetes' shape. Tugboat keeps a revision's pod
// template as the field template; Kubernetes keeps it in data, as the
// strategic merge patch that puts it back into its DaemonSet or
// StatefulSet: {"spec":{"template":{...,"$patch":"replace"}}}. kubectl
// rollout history --revision applies that patch to show the template and
// rollout undo sends it as a patch of the owner, so the door serves data
// and reads it back; the gRPC door keeps template.

// revisionToKube moves a ControllerRevision's template into data.
func revisionToKube(m map[string]any) {
	t, ok := m["template"].(map[string]any)
	delete(m, "template")
	if !ok {
		return
	}
	t["$patch"] = "replace"
	m["data"] = map[string]any{"spec": map[string]any{"template": t}}
}

// revisionFromKube moves data.spec.template of a ControllerRevision body
// back to template; a body without data, or not JSON, is left as it is
// for the decoder to judge.
func revisionFromKube(body []byte) []byte {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	data, ok := m["data"].(map[string]any)
	if !ok {
		return body
	}
	spec, _ := data["spec"].(map[string]any)
	t, ok := spec["template"].(map[string]any)
	if !ok || len(data) != 1 || len(spec) != 1 {
		return body // not the shape Tugboat stores: the decoder names data
	}
	delete(t, "$patch")
	delete(m, "data")
	m["template"] = t
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// isRevision reports whether obj is a ControllerRevision.
func isRevision(obj v1.Object) bool {
	_, ok := obj.(*v1.ControllerRevision)
	return ok
}
