// Package tainttoleration is the filter plugin for cluster taints and
// placement.clusterTolerations. A NoSchedule or NoExecute taint keeps a binding off a cluster
// unless a toleration tolerates it (corev1.Toleration semantics). A cluster the binding is
// already scheduled on is only left for a NoExecute taint: NoSchedule does not evict.
package tainttoleration

import (
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/failover"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name (Karmada's name for the same plugin).
const Name = "TaintToleration"

// Plugin filters clusters by their taints.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// now is the clock a NoExecute toleration's time runs on.
var now = time.Now

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter returns the taint check for the binding's tolerations.
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	tolerations := state.Placement.ClusterTolerations
	return func(c *clusterv1alpha1.Cluster) string {
		if len(c.Spec.Taints) == 0 {
			return ""
		}
		if t := Untolerated(c.Spec.Taints, tolerations, state.IsScheduled(c.Name), now()); t != nil {
			return Reason(t)
		}
		return ""
	}, nil
}

// Untolerated returns the first taint that keeps a binding off the cluster, or nil. A
// cluster the binding is scheduled to keeps it whatever its taints: NoSchedule does not
// evict, and leaving a cluster for a NoExecute taint is the failover controller's job, which
// honours tolerationSeconds and leaves gracefully (controllers/failover). Another cluster is
// kept off by a NoSchedule taint it does not tolerate, and by a NoExecute taint it does not
// tolerate or tolerates for a time that has run out at now.
func Untolerated(taints []corev1.Taint, tolerations []corev1.Toleration, scheduled bool, now time.Time) *corev1.Taint {
	if scheduled {
		return nil
	}
	for i := range taints {
		t := &taints[i]
		switch t.Effect {
		case corev1.TaintEffectNoSchedule:
			if !tolerated(t, tolerations) {
				return t
			}
		case corev1.TaintEffectNoExecute:
			if ev, ok := failover.NoExecuteEviction(taints[i:i+1], tolerations, now); ok && !now.Before(ev.At) {
				return t
			}
		}
	}
	return nil
}

func tolerated(t *corev1.Taint, tolerations []corev1.Toleration) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), t, true) {
			return true
		}
	}
	return false
}

// Reason is the rejection reason for an untolerated taint:
// "had untolerated taint {key}" or "had untolerated taint {key: value}".
func Reason(t *corev1.Taint) string {
	if t.Value == "" {
		return "had untolerated taint {" + t.Key + "}"
	}
	return "had untolerated taint {" + t.Key + ": " + t.Value + "}"
}
