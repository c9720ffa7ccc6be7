package containerd

import (
	"strconv"
	"strings"
	"time"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Labels on containerd container records. Everything the runtime knows about
// a sandbox or container is here (plus the sandbox's config extension), so a
// restarted kubelet loses nothing.
const (
	p = runtime.ReservedLabelPrefix

	labelKind = p + "kind" // kindSandbox or kindContainer

	labelPodUID       = p + "pod-uid"
	labelPodName      = p + "pod-name"
	labelPodNamespace = p + "pod-namespace"
	labelSandboxID    = p + "sandbox-id"
	labelAttempt      = p + "attempt"

	labelSandboxState = p + "sandbox-state" // runtime.SandboxState

	labelContainerName = p + "container-name"
	labelLogPath       = p + "log-path"
	labelImageID       = p + "image-id"
	labelStopSignal    = p + "stop-signal"
	labelCgroupsPath   = p + "cgroups-path"

	// Set when the container starts and when its exit is recorded.
	labelStartedAt  = p + "started-at"
	labelFinishedAt = p + "finished-at"
	labelExitCode   = p + "exit-code"
	labelReason     = p + "reason"
	labelMessage    = p + "message"

	kindSandbox   = "sandbox"
	kindContainer = "container"

	// extSandboxConfig is the containerd container extension holding a
	// sandbox's runtime.SandboxConfig as JSON.
	extSandboxConfig  = p + "sandbox-config"
	typeSandboxConfig = "tugboat.io/runtime.SandboxConfig"
)

// podLabels names the pod on a record.
func podLabels(pod runtime.PodRef) map[string]string {
	return map[string]string{
		labelPodUID:       pod.UID,
		labelPodName:      pod.Name,
		labelPodNamespace: pod.Namespace,
	}
}

func podFromLabels(l map[string]string) runtime.PodRef {
	return runtime.PodRef{Namespace: l[labelPodNamespace], Name: l[labelPodName], UID: l[labelPodUID]}
}

// userLabels returns the labels not under runtime.ReservedLabelPrefix.
func userLabels(l map[string]string) map[string]string {
	out := make(map[string]string)
	for k, v := range l {
		if !strings.HasPrefix(k, runtime.ReservedLabelPrefix) {
			out[k] = v
		}
	}
	return out
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func parseUint32(s string) uint32 {
	v, _ := strconv.ParseUint(s, 10, 32)
	return uint32(v)
}

// labelFilter is a containerd filter expression matching label k == v.
func labelFilter(k, v string) string {
	return "labels." + strconv.Quote(k) + "==" + strconv.Quote(v)
}

// filterExpr joins containerd filter clauses with AND.
func filterExpr(clauses ...string) string { return strings.Join(clauses, ",") }
