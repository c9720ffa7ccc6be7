package pod

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// RemoveAll removes everything of cfg.NodeName's pods from the runtime and
// the node, as housekeeping does for pods no longer on the node, for all of
// them: every sandbox (stopped, CNI DEL, network namespace removed) with
// its containers, stray containers, network namespace pins and pod
// directories (tmpfs volumes unmounted). It is `kubelet --cleanup`'s first
// step; no kubelet may be running on cfg.RootDir. Only RootDir, NodeName
// and Logger of cfg are used.
func RemoveAll(ctx context.Context, cfg Config, rt runtime.Runtime, net Network) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	met, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		return err
	}
	m := &Manager{cfg: cfg, rt: rt, net: net, metrics: met, log: cfg.Logger, workers: map[string]*worker{}}
	return m.housekeeping(ctx)
}
