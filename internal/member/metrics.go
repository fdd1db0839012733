package member

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	probeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flotilla_member_probe_duration_seconds",
		Help:    "Latency of member cluster health probes (/readyz).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"cluster"})
	probeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_member_probe_failures_total",
		Help: "Failed member cluster health probes.",
	}, []string{"cluster"})
	memberUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_member_up",
		Help: "1 when the member cluster's last probe succeeded, 0 otherwise.",
	}, []string{"cluster"})
)

func init() {
	metrics.Registry.MustRegister(probeDuration, probeFailures, memberUp)
}

func observeProbe(cluster string, d time.Duration, err error) {
	probeDuration.WithLabelValues(cluster).Observe(d.Seconds())
	if err != nil {
		probeFailures.WithLabelValues(cluster).Inc()
	}
}

func clusterUp(cluster string)   { memberUp.WithLabelValues(cluster).Set(1) }
func clusterDown(cluster string) { memberUp.WithLabelValues(cluster).Set(0) }
