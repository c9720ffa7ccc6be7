package validation_test

import (
	"testing"

	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// mountPod decodes a pod (YAML, as users write it, so the JSON names are
// checked too) whose container has securityContext sc and mounts mounts
// of a hostPath volume "data".
func mountPod(t *testing.T, sc, mounts string) func() v1.Object {
	t.Helper()
	doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n" +
		"  volumes: [{name: data, hostPath: {path: /srv/data}}]\n" +
		"  containers:\n  - name: app\n    image: busybox:1.36\n    securityContext: " + sc + "\n    volumeMounts: " + mounts + "\n"
	objs, err := manifest.Decode("pod.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("decoding:\n%s\n%v", doc, err)
	}
	p := objs[0].Object.(*v1.Pod)
	return func() v1.Object { return p }
}

func TestVolumeMountPropagationValidation(t *testing.T) {
	const m0 = "spec.containers[0].volumeMounts[0]"
	privileged, plain := "{privileged: true}", "{}"
	runValidation(t, []validationCase{
		{"None", mountPod(t, plain, "[{name: data, mountPath: /d, mountPropagation: None}]"), nil},
		{"HostToContainer", mountPod(t, plain, "[{name: data, mountPath: /d, mountPropagation: HostToContainer}]"), nil},
		{"Bidirectional privileged", mountPod(t, privileged, "[{name: data, mountPath: /d, mountPropagation: Bidirectional}]"), nil},
		{"Bidirectional unprivileged", mountPod(t, plain, "[{name: data, mountPath: /d, mountPropagation: Bidirectional}]"),
			[]string{m0 + ".mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"}},
		{"Bidirectional privileged false", mountPod(t, "{privileged: false}", "[{name: data, mountPath: /d, mountPropagation: Bidirectional}]"),
			[]string{m0 + ".mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"}},
		{"unknown propagation", mountPod(t, plain, "[{name: data, mountPath: /d, mountPropagation: rshared}]"),
			[]string{m0 + `.mountPropagation: Unsupported value: "rshared": supported values: "Bidirectional", "HostToContainer", "None"`}},
		{"empty propagation", mountPod(t, plain, `[{name: data, mountPath: /d, mountPropagation: ""}]`),
			[]string{m0 + `.mountPropagation: Unsupported value: "": supported values: "Bidirectional", "HostToContainer", "None"`}},

		{"rro Enabled", mountPod(t, plain, "[{name: data, mountPath: /d, readOnly: true, recursiveReadOnly: Enabled}]"), nil},
		{"rro IfPossible with None", mountPod(t, plain, "[{name: data, mountPath: /d, readOnly: true, recursiveReadOnly: IfPossible, mountPropagation: None}]"), nil},
		{"rro Disabled on a writable mount", mountPod(t, plain, "[{name: data, mountPath: /d, recursiveReadOnly: Disabled}]"), nil},
		{"rro Disabled with HostToContainer", mountPod(t, plain, "[{name: data, mountPath: /d, recursiveReadOnly: Disabled, mountPropagation: HostToContainer}]"), nil},
		{"rro Enabled not readOnly", mountPod(t, plain, "[{name: data, mountPath: /d, recursiveReadOnly: Enabled}]"),
			[]string{m0 + ".recursiveReadOnly: Forbidden: may only be specified when readOnly is true"}},
		{"rro IfPossible readOnly false", mountPod(t, plain, "[{name: data, mountPath: /d, readOnly: false, recursiveReadOnly: IfPossible}]"),
			[]string{m0 + ".recursiveReadOnly: Forbidden: may only be specified when readOnly is true"}},
		{"rro with HostToContainer", mountPod(t, plain, "[{name: data, mountPath: /d, readOnly: true, recursiveReadOnly: Enabled, mountPropagation: HostToContainer}]"),
			[]string{m0 + ".recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"}},
		{"rro with Bidirectional, both wrong", mountPod(t, plain, "[{name: data, mountPath: /d, recursiveReadOnly: IfPossible, mountPropagation: Bidirectional}]"),
			[]string{
				m0 + ".mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
				m0 + ".recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
				m0 + ".recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified",
			}},
		{"unknown rro", mountPod(t, plain, "[{name: data, mountPath: /d, readOnly: true, recursiveReadOnly: Always}]"),
			[]string{m0 + `.recursiveReadOnly: Unsupported value: "Always": supported values: "Disabled", "Enabled", "IfPossible"`}},
		{"empty rro", mountPod(t, plain, `[{name: data, mountPath: /d, readOnly: true, recursiveReadOnly: ""}]`),
			[]string{m0 + `.recursiveReadOnly: Unsupported value: "": supported values: "Disabled", "Enabled", "IfPossible"`}},
	})
}
