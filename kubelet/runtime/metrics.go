package runtime

import (
	"context"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// instrumentedRuntime times every call into the runtime, so /metrics shows
// where a pod start spends its time.
type instrumentedRuntime struct {
	rt       Runtime
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

var _ Runtime = (*instrumentedRuntime)(nil)

// Instrument wraps rt so that every call is timed and counted:
// tugboat_kubelet_runtime_operations_duration_seconds{operation} and
// tugboat_kubelet_runtime_operations_errors_total{operation}, registered
// with reg. The wrapper is a Runtime and nothing more: a caller that looks
// for an optional interface of rt's (server.Attacher, say) must ask rt.
func Instrument(rt Runtime, reg prometheus.Registerer) (Runtime, error) {
	i := &instrumentedRuntime{
		rt: rt,
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tugboat_kubelet_runtime_operations_duration_seconds",
			Help:    "Latency of container runtime operations.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_kubelet_runtime_operations_errors_total",
			Help: "Container runtime operations that failed.",
		}, []string{"operation"}),
	}
	for _, c := range []prometheus.Collector{i.duration, i.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return i, nil
}

func (i *instrumentedRuntime) observe(op string, start time.Time, err error) {
	i.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		i.errors.WithLabelValues(op).Inc()
	}
}

func (i *instrumentedRuntime) Version(ctx context.Context) (v VersionInfo, err error) {
	defer func(t time.Time) { i.observe("version", t, err) }(time.Now())
	return i.rt.Version(ctx)
}

func (i *instrumentedRuntime) RunPodSandbox(ctx context.Context, cfg SandboxConfig) (id string, err error) {
	defer func(t time.Time) { i.observe("run_pod_sandbox", t, err) }(time.Now())
	return i.rt.RunPodSandbox(ctx, cfg)
}

func (i *instrumentedRuntime) StopPodSandbox(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { i.observe("stop_pod_sandbox", t, err) }(time.Now())
	return i.rt.StopPodSandbox(ctx, id)
}

func (i *instrumentedRuntime) RemovePodSandbox(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { i.observe("remove_pod_sandbox", t, err) }(time.Now())
	return i.rt.RemovePodSandbox(ctx, id)
}

func (i *instrumentedRuntime) PodSandboxStatus(ctx context.Context, id string) (s SandboxStatus, err error) {
	defer func(t time.Time) { i.observe("pod_sandbox_status", t, err) }(time.Now())
	return i.rt.PodSandboxStatus(ctx, id)
}

func (i *instrumentedRuntime) ListPodSandbox(ctx context.Context, f SandboxFilter) (s []SandboxStatus, err error) {
	defer func(t time.Time) { i.observe("list_pod_sandbox", t, err) }(time.Now())
	return i.rt.ListPodSandbox(ctx, f)
}

func (i *instrumentedRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg ContainerConfig) (id string, err error) {
	defer func(t time.Time) { i.observe("create_container", t, err) }(time.Now())
	return i.rt.CreateContainer(ctx, sandboxID, cfg)
}

func (i *instrumentedRuntime) ImageVolumes(ctx context.Context) error {
	return i.rt.ImageVolumes(ctx)
}

func (i *instrumentedRuntime) RecursiveReadOnlyMounts(ctx context.Context) error {
	return i.rt.RecursiveReadOnlyMounts(ctx)
}

func (i *instrumentedRuntime) StartContainer(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { i.observe("start_container", t, err) }(time.Now())
	return i.rt.StartContainer(ctx, id)
}

func (i *instrumentedRuntime) StopContainer(ctx context.Context, id string, grace time.Duration) (err error) {
	defer func(t time.Time) { i.observe("stop_container", t, err) }(time.Now())
	return i.rt.StopContainer(ctx, id, grace)
}

func (i *instrumentedRuntime) RemoveContainer(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { i.observe("remove_container", t, err) }(time.Now())
	return i.rt.RemoveContainer(ctx, id)
}

func (i *instrumentedRuntime) ContainerStatus(ctx context.Context, id string) (s ContainerStatus, err error) {
	defer func(t time.Time) { i.observe("container_status", t, err) }(time.Now())
	return i.rt.ContainerStatus(ctx, id)
}

func (i *instrumentedRuntime) ListContainers(ctx context.Context, f ContainerFilter) (s []ContainerStatus, err error) {
	defer func(t time.Time) { i.observe("list_containers", t, err) }(time.Now())
	return i.rt.ListContainers(ctx, f)
}

func (i *instrumentedRuntime) UpdateContainerResources(ctx context.Context, id string, res Resources) (err error) {
	defer func(t time.Time) { i.observe("update_container_resources", t, err) }(time.Now())
	return i.rt.UpdateContainerResources(ctx, id, res)
}

func (i *instrumentedRuntime) ContainerStats(ctx context.Context, id string) (s ContainerStats, err error) {
	defer func(t time.Time) { i.observe("container_stats", t, err) }(time.Now())
	return i.rt.ContainerStats(ctx, id)
}

func (i *instrumentedRuntime) Exec(ctx context.Context, id string, req ExecRequest) (code int, err error) {
	defer func(t time.Time) { i.observe("exec", t, err) }(time.Now())
	return i.rt.Exec(ctx, id, req)
}

func (i *instrumentedRuntime) EnsureImage(ctx context.Context, ref string, auth *RegistryAuth) (s ImageStatus, err error) {
	defer func(t time.Time) { i.observe("pull_image", t, err) }(time.Now())
	return i.rt.EnsureImage(ctx, ref, auth)
}

func (i *instrumentedRuntime) ImportImage(ctx context.Context, r io.Reader) (s []ImageStatus, err error) {
	defer func(t time.Time) { i.observe("import_image", t, err) }(time.Now())
	return i.rt.ImportImage(ctx, r)
}

func (i *instrumentedRuntime) ImageStatus(ctx context.Context, ref string) (s ImageStatus, err error) {
	defer func(t time.Time) { i.observe("image_status", t, err) }(time.Now())
	return i.rt.ImageStatus(ctx, ref)
}

func (i *instrumentedRuntime) ListImages(ctx context.Context) (s []ImageStatus, err error) {
	defer func(t time.Time) { i.observe("list_images", t, err) }(time.Now())
	return i.rt.ListImages(ctx)
}

func (i *instrumentedRuntime) RemoveImage(ctx context.Context, ref string) (err error) {
	defer func(t time.Time) { i.observe("remove_image", t, err) }(time.Now())
	return i.rt.RemoveImage(ctx, ref)
}
