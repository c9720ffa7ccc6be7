package prober

import (
	"context"
	"strings"
	"sync"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// worker runs one probe of one container until stopped.
type worker struct {
	m         *Manager
	container *v1.Container
	probe     *v1.Probe
	kind      Kind
	target    Target

	mu     sync.Mutex
	pod    *v1.Pod
	podIP  string
	res    Result
	succ   int // consecutive successes
	fail   int // consecutive failures
	cancel context.CancelFunc
	done   bool
}

func newWorker(m *Manager, pod *v1.Pod, podIP string, c *v1.Container, pr *v1.Probe, kind Kind, t Target) *worker {
	w := &worker{m: m, container: c, probe: pr, kind: kind, target: t, pod: pod, podIP: podIP}
	w.res = Result{ContainerID: t.ContainerID}
	if kind == Liveness {
		w.res.State = Success // as in Kubernetes: alive until proven otherwise
	}
	return w
}

func (w *worker) setPod(pod *v1.Pod, podIP string) {
	w.mu.Lock()
	w.pod, w.podIP = pod, podIP
	w.mu.Unlock()
}

func (w *worker) result() Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.res
}

func (w *worker) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.cancel != nil {
		w.cancel()
	}
}

// timing returns the probe's timing fields with Kubernetes' defaults.
func timing(p *v1.Probe) (initial, period, timeout time.Duration, success, failure int) {
	initial = time.Duration(p.InitialDelaySeconds) * time.Second
	period = time.Duration(p.PeriodSeconds) * time.Second
	if period <= 0 {
		period = 10 * time.Second
	}
	timeout = time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	success, failure = int(p.SuccessThreshold), int(p.FailureThreshold)
	if success <= 0 {
		success = 1
	}
	if failure <= 0 {
		failure = 3
	}
	return
}

func (w *worker) run(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		cancel()
		return
	}
	w.cancel = cancel
	w.mu.Unlock()
	defer cancel()

	initial, period, timeout, _, _ := timing(w.probe)
	start := w.target.StartedAt
	if start.IsZero() {
		start = time.Now()
	}
	if wait := time.Until(start.Add(initial)); wait > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	uid := w.pod.GetMetadata().GetUid()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if w.kind == Startup || w.m.startupDone(uid, w.container.Name, w.target.ContainerID) {
			if !w.probeOnce(ctx, timeout) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probeOnce runs the probe and applies the thresholds. It returns false
// when the worker should stop (a startup probe that succeeded).
func (w *worker) probeOnce(ctx context.Context, timeout time.Duration) bool {
	w.mu.Lock()
	pod, podIP := w.pod, w.podIP
	w.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	var ok bool
	var msg string
	if net := w.m.cfg.NetworkProbe; net != nil && w.probe.Exec == nil {
		ok, msg = net(pctx, podIP, w.container, w.probe)
	} else {
		ok, msg = run(pctx, w.m.cfg.Exec, pod, podIP, w.container, w.target.ContainerID, w.probe, timeout)
	}
	cancel()
	if ctx.Err() != nil {
		return false // stopped while probing: the result means nothing
	}
	label := "success"
	if !ok {
		label = "failure"
	}
	w.m.results.WithLabelValues(strings.ToLower(string(w.kind)), label).Inc()

	_, _, _, succThreshold, failThreshold := timing(w.probe)
	w.mu.Lock()
	prev := w.res
	if ok {
		w.succ++
		w.fail = 0
		if w.succ >= succThreshold || w.kind != Readiness {
			w.res.State = Success
		}
		w.res.Message = ""
	} else {
		w.fail++
		w.succ = 0
		if w.fail >= failThreshold {
			w.res.State = Failure
		}
		w.res.Message = msg
	}
	cur := w.res
	w.mu.Unlock()

	if !ok && w.m.cfg.Recorder != nil {
		w.m.cfg.Recorder.Eventf(pod, "Warning", "Unhealthy", "%s probe failed: %s", w.kind, msg)
	}
	if cur.State != prev.State {
		w.m.log.Debug("probe result changed", "pod", pod.GetMetadata().GetNamespace()+"/"+pod.GetMetadata().GetName(),
			"container", w.container.Name, "kind", w.kind, "result", cur.State, "message", cur.Message)
		if w.m.cfg.OnChange != nil {
			w.m.cfg.OnChange(pod.GetMetadata().GetUid())
		}
	}
	if w.kind == Startup && cur.State == Success {
		return false
	}
	// A liveness or startup Failure gets the container killed and a new
	// ID; keep probing meanwhile (Kubernetes does, too).
	return true
}
