// Package flowcontrol is a small form of Kubernetes' API Priority and
// Fairness: the apiserver's requests are split into priority levels, each
// with its own seats (requests it executes at once) and its own queue, so
// that a flood of one kind of request (the pod writes of a density run,
// thousands of kubelets starting) cannot starve another: the leader
// election Leases of the scheduler and controller-manager have a level of
// their own, as Kubernetes' "leader-election" level, and a leader renews
// in the time its own few requests take rather than behind the flood.
//
// Contract: Acquire takes a seat of the named level, waiting in that
// level's FIFO queue while all its seats are taken, for at most the
// queue wait, the caller's context permitting. It returns the release
// function, or an error wrapping apierrors.ErrLimitExceeded ("Too many
// requests, please try again later.", Kubernetes' 429) when the wait
// passed, or the context's error. Exempt is never limited.
//
// Why it helps on a busy machine, beyond fairness: without a bound, every
// request in flight is a goroutine the apiserver's embedded etcd competes
// with for CPU, and a queue at etcd that a Lease update waits behind.
// With one, the other levels wait in the apiserver, cheaply, and etcd's
// queue stays short.
//
// Left out, against Kubernetes: shuffle sharding into several queues per
// level (one FIFO per level), borrowing of seats between levels, width of
// list requests (every request takes one seat), and the FlowSchema and
// PriorityLevelConfiguration objects (the levels are fixed, Levels).
package flowcontrol

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/apierrors"
)

// Priority level names, Kubernetes' suggested ones.
const (
	Exempt         = "exempt"
	LeaderElection = "leader-election"
	NodeHigh       = "node-high"
	System         = "system"
	WorkloadHigh   = "workload-high"
	WorkloadLow    = "workload-low"
	GlobalDefault  = "global-default"
	CatchAll       = "catch-all"
)

// shares are Kubernetes' nominal concurrency shares of its suggested
// priority levels: a level's seats are its share of the total.
var shares = []struct {
	name  string
	share int
}{
	{LeaderElection, 10}, {NodeHigh, 40}, {System, 30}, {WorkloadHigh, 40},
	{WorkloadLow, 100}, {GlobalDefault, 20}, {CatchAll, 5},
}

// Defaults: kube-apiserver's --max-requests-inflight 400 plus
// --max-mutating-requests-inflight 200, and its queue wait.
const (
	DefaultTotalSeats = 600
	DefaultQueueWait  = 15 * time.Second
)

// Seats splits total seats over the levels by their shares (each at
// least one), as Kubernetes does: ceil(total * share / sum of shares).
func Seats(total int) map[string]int {
	sum := 0
	for _, s := range shares {
		sum += s.share
	}
	out := map[string]int{}
	for _, s := range shares {
		out[s.name] = max((total*s.share+sum-1)/sum, 1)
	}
	return out
}

// Limiter holds the levels.
type Limiter struct {
	levels    map[string]chan struct{}
	queueWait time.Duration
	executing *prometheus.GaugeVec
	waiting   *prometheus.GaugeVec
	rejected  *prometheus.CounterVec
	wait      *prometheus.HistogramVec
}

// New makes a limiter with total seats split over the levels (Seats) and
// queueWait as the longest wait for one; reg may be nil.
func New(total int, queueWait time.Duration, reg prometheus.Registerer) *Limiter {
	l := &Limiter{levels: map[string]chan struct{}{}, queueWait: queueWait,
		executing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tugboat_apiserver_flowcontrol_current_executing_requests", Help: "Requests executing now, by priority level.",
		}, []string{"priority_level"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tugboat_apiserver_flowcontrol_current_inqueue_requests", Help: "Requests waiting for a seat now, by priority level.",
		}, []string{"priority_level"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_apiserver_flowcontrol_rejected_requests_total", Help: "Requests refused by priority level and reason (time-out: the queue wait passed; cancelled: the caller gave up).",
		}, []string{"priority_level", "reason"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tugboat_apiserver_flowcontrol_request_wait_duration_seconds", Help: "Time requests waited for a seat, by priority level.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"priority_level"}),
	}
	for name, n := range Seats(total) {
		l.levels[name] = make(chan struct{}, n)
	}
	if reg != nil {
		reg.MustRegister(l.executing, l.waiting, l.rejected, l.wait)
	}
	return l
}

// Acquire takes a seat of level (see the package comment).
func (l *Limiter) Acquire(ctx context.Context, level string) (release func(), err error) {
	if level == Exempt {
		return func() {}, nil
	}
	seats, ok := l.levels[level]
	if !ok {
		seats = l.levels[CatchAll]
	}
	start := time.Now()
	select {
	case seats <- struct{}{}:
	default:
		l.waiting.WithLabelValues(level).Inc()
		t := time.NewTimer(l.queueWait)
		select {
		case seats <- struct{}{}:
		case <-t.C:
			l.waiting.WithLabelValues(level).Dec()
			l.rejected.WithLabelValues(level, "time-out").Inc()
			return nil, apierrors.New(apierrors.ErrLimitExceeded, "Too many requests, please try again later.")
		case <-ctx.Done():
			t.Stop()
			l.waiting.WithLabelValues(level).Dec()
			l.rejected.WithLabelValues(level, "cancelled").Inc()
			return nil, fmt.Errorf("waiting for a seat of priority level %s: %w", level, ctx.Err())
		}
		t.Stop()
		l.waiting.WithLabelValues(level).Dec()
	}
	l.wait.WithLabelValues(level).Observe(time.Since(start).Seconds())
	l.executing.WithLabelValues(level).Inc()
	return func() {
		l.executing.WithLabelValues(level).Dec()
		<-seats
	}, nil
}
