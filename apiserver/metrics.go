package apiserver

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	v1 "github.com/tugboat/tugboat/api/v1"
	"google.golang.org/protobuf/types/known/anypb"
)

type metrics struct {
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	watchSent    *prometheus.CounterVec
	watchOpen    *prometheus.GaugeVec
	authFailures *prometheus.CounterVec
	// managedFieldsErrors counts writes stored without their Update entry
	// (managedfields.go).
	managedFieldsErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_apiserver_requests_total",
			Help: "API requests by kind, verb and gRPC code.",
		}, []string{"kind", "verb", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tugboat_apiserver_request_duration_seconds",
			Help:    "API request latency by kind and verb (watches: until the stream ends).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"kind", "verb"}),
		watchSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_apiserver_watch_events_sent_total",
			Help: "Watch events sent to clients by kind and type.",
		}, []string{"kind", "type"}),
		watchOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tugboat_apiserver_watch_streams",
			Help: "Open watch streams by kind.",
		}, []string{"kind"}),
	}
	m.authFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tugboat_apiserver_auth_failures_total",
		Help: "Requests refused by stage (authentication, authorization, escalation: RBAC grants beyond the caller's own).",
	}, []string{"stage"})
	m.managedFieldsErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tugboat_apiserver_managed_fields_errors_total",
		Help: "Writes stored with their managedFields unchanged because the field manager could not follow the object.",
	})
	reg.MustRegister(m.requests, m.latency, m.watchSent, m.watchOpen, m.authFailures, m.managedFieldsErrors)
	return m
}

// requestKind names the kind a request is about, for metrics labels.
func requestKind(req any) string {
	// A request that names its kind says it; one that carries an object
	// (Create, Update: their kind field is empty) is of the object's type.
	if r, ok := req.(interface{ GetKind() string }); ok && r.GetKind() != "" {
		return r.GetKind()
	}
	switch r := req.(type) {
	case interface{ GetObject() *anypb.Any }:
		url := r.GetObject().GetTypeUrl()
		for i := len(url) - 1; i >= 0; i-- {
			if url[i] == '.' {
				return url[i+1:]
			}
		}
		return url
	case *v1.BindRequest:
		return "Pod"
	}
	return ""
}

func verbOf(fullMethod string) string {
	for i := len(fullMethod) - 1; i >= 0; i-- {
		if fullMethod[i] == '/' {
			return fullMethod[i+1:]
		}
	}
	return fullMethod
}

func (s *Server) unaryMetrics(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	kind, verb := requestKind(req), verbOf(info.FullMethod)
	s.metrics.requests.WithLabelValues(kind, verb, status.Code(err).String()).Inc()
	s.metrics.latency.WithLabelValues(kind, verb).Observe(time.Since(start).Seconds())
	return resp, err
}

func (s *Server) streamMetrics(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	s.metrics.requests.WithLabelValues("", verbOf(info.FullMethod), status.Code(err).String()).Inc()
	return err
}
