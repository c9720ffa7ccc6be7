package cri

import (
	"maps"
	"strings"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Labels and annotations on CRI sandboxes and containers. The io.kubernetes
// labels are Kubernetes' own (its kubelet sets the same), so crictl shows
// the pod's name and namespace for each container and `crictl pods
// --namespace` / `crictl ps --pod` work as on a Kubernetes node; the
// runtime.tugboat.io ones hold what the CRI status does not carry.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"

	p = runtime.ReservedLabelPrefix
	// annotationSandboxConfig, on a sandbox, is its runtime.SandboxConfig
	// as JSON (without labels and annotations), read back by
	// PodSandboxStatus and ListPodSandbox.
	annotationSandboxConfig = p + "sandbox-config"
	// labelImage and labelImageID, on a container, are the image
	// reference it was created from and the image's config digest (the
	// CRI status reports a repo tag and a repo digest instead).
	labelImage   = p + "image"
	labelImageID = p + "image-id"
	// labelSandboxID, on a container, is its sandbox (not in the CRI
	// status).
	labelSandboxID = p + "sandbox-id"
)

// reserved reports whether a label key is the runtime's, not the caller's.
func reserved(k string) bool {
	return strings.HasPrefix(k, runtime.ReservedLabelPrefix) || strings.HasPrefix(k, "io.kubernetes.")
}

// podLabels names the pod on a sandbox or container.
func podLabels(pod runtime.PodRef) map[string]string {
	return map[string]string{labelPodName: pod.Name, labelPodNamespace: pod.Namespace, labelPodUID: pod.UID}
}

func podFromLabels(l map[string]string) runtime.PodRef {
	return runtime.PodRef{Namespace: l[labelPodNamespace], Name: l[labelPodName], UID: l[labelPodUID]}
}

// merge returns base with extra added (base wins: it holds the reserved
// keys).
func merge(extra, base map[string]string) map[string]string {
	out := make(map[string]string, len(extra)+len(base))
	maps.Copy(out, extra)
	maps.Copy(out, base)
	return out
}

// userLabels returns the caller's labels (none of the reserved ones).
func userLabels(l map[string]string) map[string]string {
	out := make(map[string]string)
	for k, v := range l {
		if !reserved(k) {
			out[k] = v
		}
	}
	return out
}
