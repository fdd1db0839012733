package memberqueue

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	processed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_member_work_total",
		Help: "Keys processed by per-member workers, by queue and result (success, error, timeout).",
	}, []string{"queue", "result"})
	duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flotilla_member_work_duration_seconds",
		Help:    "Time per key processed by per-member workers.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"queue"})
)

func init() { metrics.Registry.MustRegister(processed, duration) }

func observe(queue string, took time.Duration, err error, timedOut bool) {
	result := "success"
	switch {
	case timedOut:
		result = "timeout"
	case err != nil:
		result = "error"
	}
	processed.WithLabelValues(queue, result).Inc()
	duration.WithLabelValues(queue).Observe(took.Seconds())
}
