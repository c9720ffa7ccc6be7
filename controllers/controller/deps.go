package controller

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Recorder records Events about objects. *record.Recorder implements it.
// Eventf never blocks and never fails (events are best effort).
type Recorder interface {
	Eventf(obj v1.Object, typ, reason, format string, args ...any)
}

// Deps is what the controller-manager hands every controller it builds.
type Deps struct {
	Client    *client.Client
	Informers *Informers
	Recorder  Recorder
	Metrics   *Metrics
	// Registry is where a controller registers its own metrics (through
	// Register, so a rebuilt controller reuses them). May be nil.
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// Runner is a built controller: it runs until ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Event types.
const (
	Normal  = "Normal"
	Warning = "Warning"
)
