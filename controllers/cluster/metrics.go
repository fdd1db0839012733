package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var collectionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "flotilla_cluster_status_collection_duration_seconds",
	Help:    "Time to collect a member cluster's version, APIs, node and resource summaries.",
	Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
}, []string{"cluster", "result"})

func init() {
	metrics.Registry.MustRegister(collectionDuration)
}

func observeCollection(cluster string, d time.Duration, ok bool) {
	result := "success"
	if !ok {
		result = "error"
	}
	collectionDuration.WithLabelValues(cluster, result).Observe(d.Seconds())
}

func forgetMetrics(cluster string) {
	collectionDuration.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}
