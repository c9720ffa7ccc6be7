package validation

import (
	"fmt"
	pathpkg "path"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// The parts of a container's spec that depend on its kind (an app
// container, an init container, or a sidecar: an init container with
// restartPolicy Always) — probes, lifecycle hooks, restart policy — and
// the termination message fields, with Kubernetes' rules and messages.

// containerKind is which list a container is in, and for an init
// container whether it is a sidecar.
type containerKind int

const (
	appContainer containerKind = iota
	initContainer
	sidecarContainer
)

// kindOf is c's kind; init says it is in initContainers.
func kindOf(c *v1.Container, init bool) containerKind {
	switch {
	case !init:
		return appContainer
	case c.RestartPolicy == "Always":
		return sidecarContainer
	}
	return initContainer
}

// containerKindFields checks restartPolicy, the probes, lifecycle and the
// termination message fields of c at path; grace is the pod's
// terminationGracePeriodSeconds (nil: unset).
func containerKindFields(errs *Errs, path string, c *v1.Container, kind containerKind, grace *int64) {
	containerRestartPolicy(errs, path, c)
	if kind == initContainer {
		for field, set := range map[string]bool{"lifecycle": c.Lifecycle != nil, "livenessProbe": c.LivenessProbe != nil,
			"readinessProbe": c.ReadinessProbe != nil, "startupProbe": c.StartupProbe != nil} {
			if set {
				errs.Add(path+"."+field, "Forbidden: may not be set for init containers without restartPolicy=Always")
			}
		}
	} else {
		probe(errs, path+".livenessProbe", c.LivenessProbe, true)
		probe(errs, path+".readinessProbe", c.ReadinessProbe, false)
		probe(errs, path+".startupProbe", c.StartupProbe, true)
		if c.Lifecycle != nil {
			lifecycleHandler(errs, path+".lifecycle.postStart", c.Lifecycle.PostStart, grace)
			lifecycleHandler(errs, path+".lifecycle.preStop", c.Lifecycle.PreStop, grace)
		}
	}
	if p := c.TerminationMessagePath; p != "" {
		if !strings.HasPrefix(p, "/") || pathpkg.Clean(p) != p {
			errs.Add(path+".terminationMessagePath", "%q must be an absolute, clean path", p)
		}
	}
	if c.TerminationMessagePolicy != "" {
		OneOf(errs, path+".terminationMessagePolicy", c.TerminationMessagePolicy, "File", "FallbackToLogsOnError")
	}
}

// probe checks a probe; killing says it is a liveness or startup probe
// (whose successThreshold must be 1 and which may have its own
// terminationGracePeriodSeconds).
func probe(errs *Errs, path string, p *v1.Probe, killing bool) {
	if p == nil {
		return
	}
	n := 0
	if p.Exec != nil {
		n++
		if len(p.Exec.Command) == 0 {
			errs.Add(path+".exec.command", "required")
		}
	}
	if p.HttpGet != nil {
		n++
		httpGet(errs, path+".httpGet", p.HttpGet)
	}
	if p.TcpSocket != nil {
		n++
		IntOrName(errs, path+".tcpSocket.port", p.TcpSocket.Port)
	}
	if p.Grpc != nil {
		n++
		Port(errs, path+".grpc.port", p.Grpc.Port)
	}
	if n != 1 {
		errs.Add(path, "exactly one of exec, httpGet, tcpSocket or grpc must be set (found %d)", n)
	}
	for _, f := range []struct {
		name string
		v    int32
	}{{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold}} {
		if f.v < 0 {
			errs.Add(path+"."+f.name, "must be >= 0")
		}
	}
	if killing && p.SuccessThreshold > 1 {
		errs.Add(path+".successThreshold", "Invalid value: %d: must be 1", p.SuccessThreshold)
	}
	if g := p.TerminationGracePeriodSeconds; g != nil {
		switch {
		case !killing:
			errs.Add(path+".terminationGracePeriodSeconds", "Invalid value: %d: must not be set for readinessProbes", *g)
		case *g <= 0:
			errs.Add(path+".terminationGracePeriodSeconds", "Invalid value: %d: must be greater than 0", *g)
		}
	}
}

func httpGet(errs *Errs, path string, h *v1.HTTPGetAction) {
	IntOrName(errs, path+".port", h.Port)
	if h.Scheme != "" {
		OneOf(errs, path+".scheme", h.Scheme, "HTTP", "HTTPS")
	}
	for i, hd := range h.HttpHeaders {
		if hd.Name == "" || strings.ContainsAny(hd.Name, " :\t\r\n") {
			errs.Add(fmt.Sprintf("%s.httpHeaders[%d].name", path, i), "%q must be a valid HTTP header name", hd.Name)
		}
	}
}

// lifecycleHandler checks a postStart or preStop hook as Kubernetes'
// validateHandler does: one of exec, httpGet and sleep, the sleep no
// longer than the pod's terminationGracePeriodSeconds. tcpSocket,
// deprecated, is accepted by Kubernetes but never run by its kubelet (the
// hook fails "Cannot run handler"): refused here rather than accepted and
// failed later.
func lifecycleHandler(errs *Errs, path string, h *v1.LifecycleHandler, grace *int64) {
	if h == nil {
		return
	}
	n := 0
	more := func(field string) bool {
		if n > 0 {
			errs.Add(path+"."+field, "Forbidden: may not specify more than 1 handler type")
			return false
		}
		n++
		return true
	}
	if h.Exec != nil && more("exec") && len(h.Exec.Command) == 0 {
		errs.Add(path+".exec.command", "Required value")
	}
	if h.HttpGet != nil && more("httpGet") {
		httpGet(errs, path+".httpGet", h.HttpGet)
	}
	if h.TcpSocket != nil && more("tcpSocket") {
		errs.Add(path+".tcpSocket", "Forbidden: deprecated, and never run by the kubelet: use exec, httpGet or sleep")
	}
	if h.Sleep != nil && more("sleep") && grace != nil && (h.Sleep.Seconds < 0 || h.Sleep.Seconds > *grace) {
		errs.Add(path+".sleep", "Invalid value: %d: must be non-negative and less than terminationGracePeriodSeconds (%d)", h.Sleep.Seconds, *grace)
	}
	if n == 0 {
		errs.Add(path, "Required value: must specify a handler type")
	}
}
