package scheduler

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_scheduler_attempts_total",
		Help: "Scheduling cycles, by result: scheduled, unschedulable or error.",
	}, []string{"result"})
	latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "flotilla_scheduler_cycle_duration_seconds",
		Help:    "Time to schedule one binding, from reading it to the cycle's result.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
	unschedulable = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "flotilla_scheduler_unschedulable_bindings_total",
		Help: "Times a binding was found unschedulable (counted when its Scheduled condition changes).",
	})
)

func init() { metrics.Registry.MustRegister(attempts, latency, unschedulable) }

func observeAttempt(start time.Time, err error) {
	latency.Observe(time.Since(start).Seconds())
	switch {
	case err == nil:
		attempts.WithLabelValues("scheduled").Inc()
	default:
		attempts.WithLabelValues("unschedulable_or_error").Inc()
	}
}
