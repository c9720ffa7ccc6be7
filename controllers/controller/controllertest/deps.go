package controllertest

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/record"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Context is a context cancelled when the test ends or after timeout.
func Context(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// Deps builds controller dependencies on c with a fresh informer factory,
// a running event recorder and metrics on a fresh registry.
func Deps(ctx context.Context, c *client.Client) controller.Deps {
	reg := prometheus.NewRegistry()
	rec := record.New(c, "controller-manager", "test", reg, Logger())
	go rec.Run(ctx)
	return controller.Deps{
		Client: c, Informers: controller.NewInformers(c, 0, Logger()), Recorder: rec,
		Metrics: controller.NewMetrics(reg), Registry: reg, Logger: Logger(),
	}
}

// RunAll runs the informers and the controllers until the test ends.
func RunAll(ctx context.Context, t testing.TB, f *controller.Informers, runners ...controller.Runner) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, len(runners)+1)
	go func() { _ = f.Run(ctx); done <- struct{}{} }()
	for _, r := range runners {
		go func() { _ = r.Run(ctx); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		for range len(runners) + 1 {
			<-done
		}
	})
}
