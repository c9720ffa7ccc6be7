package pod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Container lifecycle hooks, with Kubernetes' semantics
// (pkg/kubelet/lifecycle and kuberuntime_container.go):
//
//   - postStart runs right after the container started (after its Started
//     event), in the sync, so the container is reported Running (and is
//     probed) only once the hook returned (a pod deleted or evicted
//     meanwhile aborts it, and is stopped). A failing hook gets a Warning
//     FailedPostStartHook event ("PostStartHook failed": the hook's output
//     stays out of events, which anyone reading the namespace sees), the
//     container is killed (Killing "FailedPostStartHook", its preStop
//     included) and waits with reason PostStartHookError and the hook's
//     message until the next sync restarts it per restartPolicy.
//   - preStop runs before the stop signal on every kill (deletion,
//     eviction, a failed liveness or startup probe, a changed image, a
//     failed postStart), inside the grace period: the stop waits for the
//     hook at most the grace period and gets what remains of it, at least
//     minStopGrace. A failing hook gets a Warning FailedPreStopHook event
//     ("PreStopHook failed") and the stop goes on.
//
// Handlers: exec (in the container, through the runtime's Exec), httpGet
// (from the node to host, default the pod IP, on a port by number or by
// the container port's name; any response is a success, as in
// Kubernetes: only a failed request fails the hook) and sleep.
//
// An httpGet hook honours scheme and httpHeaders as Kubernetes'
// ConsistentHTTPGetHandlers does: HTTPS without verifying the
// certificate, and when an HTTPS request is answered in plain HTTP (Go's
// "server gave HTTP response to HTTPS client") it is sent again over HTTP
// without its Authorization header, for hooks written before scheme was
// honoured. A fallback that succeeds counts as the hook's success, and is
// reported with a Warning LifecycleHTTPFallback event and
// tugboat_kubelet_lifecycle_handler_http_fallbacks_total (Kubernetes'
// kubelet_lifecycle_handler_http_fallbacks_total); one that fails leaves
// the HTTPS error as the hook's. tcpSocket hooks are refused by
// validation (Kubernetes accepts them only for compatibility and does not
// run them).

const (
	// ReasonLifecycleHTTPFallback is the Warning event of an HTTPS hook
	// answered in plain HTTP and sent again over HTTP.
	ReasonLifecycleHTTPFallback = "LifecycleHTTPFallback"
	// ReasonPostStartHookError is the waiting reason of a container whose
	// postStart hook failed.
	ReasonPostStartHookError = "PostStartHookError"
	// minStopGrace is the least time a container gets between the stop
	// signal and SIGKILL, whatever a preStop hook used of its grace period
	// (Kubernetes' minimumGracePeriodInSeconds).
	minStopGrace = 2 * time.Second
	// hookOutput bounds what is kept of an exec hook's output.
	hookOutput = 4096
)

// runHook runs one lifecycle hook of container c (running as containerID)
// and returns an error with Kubernetes' message for a failure.
func (w *worker) runHook(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID, podIP string, h *v1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		out := prober.LimitedBuffer{Max: hookOutput}
		code, err := w.m.rt.Exec(ctx, containerID, runtime.ExecRequest{Cmd: h.Exec.Command, Stdout: &out, Stderr: &out})
		if err == nil && code != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), code, strings.TrimSpace(out.String()))
		}
		if err != nil {
			return fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podName(pod), err, out.String())
		}
	case h.HttpGet != nil:
		fellBack, err := hookHTTP(ctx, c, podIP, h.HttpGet)
		if err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HttpGet.Path, c.Name, podName(pod), err)
		}
		if fellBack != "" {
			w.m.metrics.lifecycleHTTPFallbacks.Inc()
			w.m.rec.Eventf(pod, eventWarning, ReasonLifecycleHTTPFallback, "request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", fellBack)
		}
	case h.Sleep != nil:
		t := time.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: container terminated before sleep hook finished", h.Sleep.Seconds, c.Name, podName(pod))
		case <-t.C:
		}
	default:
		return fmt.Errorf("Cannot run handler: invalid handler: %v", h)
	}
	return nil
}

// postStart runs c's postStart hook, if any, on the container just
// started as id. On failure it records the events, kills the container
// and makes it wait with PostStartHookError; it reports whether the hook
// passed (or there is none).
func (r *syncRun) postStart(ctx context.Context, c *v1.Container, id string) bool {
	h := c.GetLifecycle().GetPostStart()
	if h == nil {
		return true
	}
	w, pod := r.w, r.in.pod
	// A pod told to stop (deleted, evicted) aborts the hook: the next sync
	// stops the container (preStop, grace) with the pod.
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.stopping:
			cancel()
		case <-hctx.Done():
		}
	}()
	err := w.runHook(hctx, pod, c, id, addrString(r.sb.IP), h)
	if err == nil {
		return true
	}
	if hctx.Err() != nil {
		// The kubelet is stopping (the next one sees the container), or
		// the pod is: not a failure of the hook.
		r.touched[id] = true
		r.waiting[c.Name] = &waiting{Reason: ReasonContainerCreating}
		return false
	}
	w.log.Warn("postStart hook failed", "container", c.Name, "err", err)
	w.m.rec.Eventf(pod, eventWarning, "FailedPostStartHook", "PostStartHook failed")
	r.touched[id] = true
	w.killContainer(ctx, pod, c, id, addrString(r.sb.IP), "FailedPostStartHook", podGrace(pod), nil)
	r.waiting[c.Name] = &waiting{Reason: ReasonPostStartHookError, Message: err.Error()}
	r.wakeAt(w.m.now().Add(time.Second)) // then restarted, or CrashLoopBackOff
	return false
}

// killContainer stops container id (of spec c) as Kubernetes'
// killContainer does: a Killing event with message, c's preStop hook
// within grace, then — for a sidecar being stopped with the pod — its turn
// (turn, if set, returns once the containers it waits for have stopped),
// then the stop signal with what remains of grace (at least minStopGrace)
// and SIGKILL after it.
func (w *worker) killContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, id, podIP, message string, grace time.Duration, turn func(context.Context)) error {
	w.m.rec.Eventf(pod, eventNormal, "Killing", "%s", message)
	deadline := w.m.now().Add(grace)
	if h := c.GetLifecycle().GetPreStop(); h != nil && grace > 0 {
		w.preStop(ctx, pod, c, id, podIP, h, grace)
	}
	if turn != nil {
		if left := deadline.Sub(w.m.now()); left > 0 {
			tctx, cancel := context.WithTimeout(ctx, left)
			turn(tctx)
			cancel()
		}
	}
	return w.m.rt.StopContainer(ctx, id, max(deadline.Sub(w.m.now()), minStopGrace))
}

// preStop runs the preStop hook h and waits for it at most grace; a hook
// still running then is left to end with the container (its exec dies
// with it) or with ctx.
func (w *worker) preStop(ctx context.Context, pod *v1.Pod, c *v1.Container, id, podIP string, h *v1.LifecycleHandler, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.runHook(ctx, pod, c, id, podIP, h); err != nil && ctx.Err() == nil {
			w.log.Warn("preStop hook failed", "container", c.Name, "err", err)
			w.m.rec.Eventf(pod, eventWarning, "FailedPreStopHook", "PreStopHook failed")
		}
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		w.log.Info("preStop hook not completed in the grace period", "container", c.Name, "grace", grace)
	case <-ctx.Done():
	}
}

// hookHTTP sends the httpGet hook's request (built as a probe's:
// prober.HTTPGet); only a failed request is an error. An HTTPS request
// answered in plain HTTP is sent again over HTTP, without its
// Authorization header, as Kubernetes' runHTTPHandler does; fellBack is
// then the host:port it reached that way, and err nil.
func hookHTTP(ctx context.Context, c *v1.Container, podIP string, h *v1.HTTPGetAction) (fellBack string, err error) {
	req, _, err := prober.HTTPGet(ctx, podIP, c, h, "tugboat-lifecycle/1.0")
	if err != nil {
		return "", err
	}
	client := prober.HTTPClient(0)
	err = hookDo(client, req)
	if !isHTTPResponseError(err) {
		return "", err
	}
	plain := req.Clone(ctx)
	plain.URL.Scheme = "http"
	plain.Header.Del("Authorization")
	if hookDo(client, plain) != nil {
		return "", err
	}
	return plain.URL.Host, nil
}

// hookDo sends req and discards (a bounded part of) the answer's body.
func hookDo(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.Body.Close()
}

// isHTTPResponseError is Kubernetes' test for an HTTPS request that a
// plain HTTP server answered.
func isHTTPResponseError(err error) bool {
	var uerr *url.Error
	return errors.As(err, &uerr) && strings.Contains(uerr.Err.Error(), "server gave HTTP response to HTTPS client")
}

// podName is how Kubernetes names a pod in messages: name_namespace(uid).
func podName(pod *v1.Pod) string {
	m := pod.GetMetadata()
	return fmt.Sprintf("%s_%s(%s)", m.GetName(), m.GetNamespace(), m.GetUid())
}
