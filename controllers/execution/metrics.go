package execution

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// applies counts, per member, the Works applied there, those a check after a start found
// unchanged (not applied again), and the checks that waited for the member cache to sync.
var applies = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "flotilla_execution_applies_total",
	Help: "Works applied to members (result applied), found as last applied after a start and not applied again (result unchanged), or whose check after a start waited for the member cache's first list (result waited).",
}, []string{"cluster", "result"})

func init() { metrics.Registry.MustRegister(applies) }

// Applies is how many Works of cluster were applied, or found unchanged, so far (for tests).
func Applies(cluster, result string) float64 {
	m := &dto.Metric{}
	if err := applies.WithLabelValues(cluster, result).Write(m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
