package rollout

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	stageDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flotilla_rollout_stage_duration_seconds",
		Help:    "Time from a rollout stage opening to its clusters healthy and soaked, by stage name.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	}, []string{"stage"})
	halts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_rollout_halts_total",
		Help: "Rollouts halted by a failed health gate, by template kind.",
	}, []string{"kind"})
)

func init() { metrics.Registry.MustRegister(stageDuration, halts) }
