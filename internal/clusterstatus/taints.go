package clusterstatus

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// systemTaintEffect is the effect of the taints that follow the Ready condition: they keep
// new workloads off the member and leave running ones where they are.
const systemTaintEffect = corev1.TaintEffectNoSchedule

// SyncReadyTaints returns taints with the system taints in line with the Ready condition's
// status: cluster.karmada.io/not-ready while it is False, cluster.karmada.io/unreachable while
// it is Unknown, neither while it is True. They are NoSchedule taints, and with noExecute
// NoExecute ones as well (which move workloads away once their tolerations run out); without
// it, NoExecute taints of those keys are left alone, whoever put them there (a
// ClusterTaintPolicy, say). Other taints are kept in their order; a taint that stays keeps its
// TimeAdded, a new one gets now. changed is false when taints already matched, in which case
// taints is returned as is.
func SyncReadyTaints(taints []corev1.Taint, ready metav1.ConditionStatus, now metav1.Time, noExecute bool) (out []corev1.Taint, changed bool) {
	want := map[string]bool{
		wellknown.TaintClusterNotReady:    ready == metav1.ConditionFalse,
		wellknown.TaintClusterUnreachable: ready == metav1.ConditionUnknown,
	}
	effects := []corev1.TaintEffect{systemTaintEffect}
	if noExecute {
		effects = append(effects, corev1.TaintEffectNoExecute)
	}
	out = taints
	for _, key := range []string{wellknown.TaintClusterNotReady, wellknown.TaintClusterUnreachable} {
		for _, effect := range effects {
			var c bool
			if want[key] {
				out, c = AddTaint(out, key, effect, now)
			} else {
				out, c = RemoveTaint(out, key, effect)
			}
			changed = changed || c
		}
	}
	return out, changed
}

// AddTaint returns taints with key:effect added (TimeAdded now) unless it is already there.
// The input slice is not modified.
func AddTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect, now metav1.Time) ([]corev1.Taint, bool) {
	for _, t := range taints {
		if t.Key == key && t.Effect == effect {
			return taints, false
		}
	}
	out := make([]corev1.Taint, 0, len(taints)+1)
	out = append(out, taints...)
	return append(out, corev1.Taint{Key: key, Effect: effect, TimeAdded: &now}), true
}

// RemoveTaint returns taints without key:effect. The input slice is not modified.
func RemoveTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	removed := false
	for _, t := range taints {
		if t.Key == key && t.Effect == effect {
			removed = true
			continue
		}
		out = append(out, t)
	}
	if !removed {
		return taints, false
	}
	return out, true
}
