// Package warning carries what admission tells about a request besides
// its result: warnings for the client (gRPC header "warning", HTTP header
// "Warning: 299 - ...", printed by tugctl and kubectl) and annotations for
// the request's audit event ("pod-security.kubernetes.io/audit-violations").
//
// The server edge (the gRPC interceptor, the Kubernetes door) puts a
// Recorder in the request's context; admission adds to it; without one,
// Add and Annotate do nothing.
package warning

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// Recorder collects a request's warnings and audit annotations; safe for
// concurrent use.
type Recorder struct {
	mu          sync.Mutex
	warnings    []string
	annotations map[string]string
}

type key struct{}

// NewContext returns ctx with a new Recorder.
func NewContext(ctx context.Context) (context.Context, *Recorder) {
	r := &Recorder{}
	return context.WithValue(ctx, key{}, r), r
}

// From is ctx's Recorder, or nil.
func From(ctx context.Context) *Recorder {
	r, _ := ctx.Value(key{}).(*Recorder)
	return r
}

// Add records a warning for the client (once, however often added).
func Add(ctx context.Context, text string) {
	if r := From(ctx); r != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !slices.Contains(r.warnings, text) {
			r.warnings = append(r.warnings, text)
		}
	}
}

// Annotate records an annotation of the request's audit event.
func Annotate(ctx context.Context, key, value string) {
	if r := From(ctx); r != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.annotations == nil {
			r.annotations = map[string]string{}
		}
		r.annotations[key] = value
	}
}

// Warnings are the recorded warnings, in the order added (nil-safe).
func (r *Recorder) Warnings() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.warnings)
}

// Annotations are the recorded audit annotations (nil-safe).
func (r *Recorder) Annotations() map[string]string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.annotations)
}

// MetadataKey is the gRPC header that carries warnings, one value each.
const MetadataKey = "warning"
