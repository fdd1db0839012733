// Package tainttoleration is the filter plugin for cluster taints and
// placement.clusterTolerations. A NoSchedule or NoExecute taint keeps a binding off a cluster
// unless a toleration tolerates it (corev1.Toleration semantics). A cluster the binding is
// already scheduled on is only left for a NoExecute taint: NoSchedule does not evict.
package tainttoleration

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's registry name (Karmada's name for the same plugin).
const Name = "TaintToleration"

// Plugin filters clusters by their taints.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter returns the taint check for the binding's tolerations.
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	tolerations := state.Placement.ClusterTolerations
	return func(c *clusterv1alpha1.Cluster) string {
		if len(c.Spec.Taints) == 0 {
			return ""
		}
		if t := Untolerated(c.Spec.Taints, tolerations, state.IsScheduled(c.Name)); t != nil {
			return Reason(t)
		}
		return ""
	}, nil
}

// Untolerated returns the first taint that keeps a binding off the cluster, or nil. Taints of
// effect NoExecute always count; NoSchedule taints count only when the binding is not already
// scheduled on the cluster (scheduled is false); PreferNoSchedule never does. Tolerations
// with the comparison operators Gt and Lt compare integer values.
func Untolerated(taints []corev1.Taint, tolerations []corev1.Toleration, scheduled bool) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		switch t.Effect {
		case corev1.TaintEffectNoExecute:
		case corev1.TaintEffectNoSchedule:
			if scheduled {
				continue
			}
		default:
			continue
		}
		if !tolerated(t, tolerations) {
			return t
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
