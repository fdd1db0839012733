package failover

import (
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// Karmada's defaults (karmada-webhook's --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds): a placement that says nothing about the system
// NoExecute taints tolerates each of them for five minutes.
const (
	DefaultNotReadyTolerationSeconds    int64 = 300
	DefaultUnreachableTolerationSeconds int64 = 300
)

// Tolerations returns the placement's tolerations with the default ones for the system
// NoExecute taints added, each unless a toleration of the placement already tolerates that
// taint. A negative default adds none. The input is not modified.
func Tolerations(placement []corev1.Toleration, notReadySeconds, unreachableSeconds int64) []corev1.Toleration {
	out := placement
	for _, d := range []struct {
		key     string
		seconds int64
	}{{wellknown.TaintClusterNotReady, notReadySeconds}, {wellknown.TaintClusterUnreachable, unreachableSeconds}} {
		if d.seconds < 0 {
			continue
		}
		taint := &corev1.Taint{Key: d.key, Effect: corev1.TaintEffectNoExecute}
		if tolerates(placement, taint) {
			continue
		}
		if len(out) == len(placement) {
			out = append(make([]corev1.Toleration, 0, len(placement)+2), placement...)
		}
		out = append(out, corev1.Toleration{Key: d.key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(d.seconds)})
	}
	return out
}

// Eviction is when a binding must leave a cluster because of its NoExecute taints.
type Eviction struct {
	// At is the time the binding must be gone; the zero time means at once.
	At time.Time
	// Taint is the taint that sends it away first.
	Taint corev1.Taint
	// Tolerated is true when a toleration held the taint off for a while (At is then its
	// TimeAdded plus the toleration's seconds).
	Tolerated bool
}

// NoExecuteEviction returns when a binding with tolerations must leave a cluster with
// taints, as Kubernetes' taint manager decides it for pods: a NoExecute taint that no
// toleration tolerates evicts at once; one tolerated only by tolerations with
// tolerationSeconds evicts that many seconds (the fewest among them) after the taint's
// TimeAdded (seen, when the taint has none); a taint tolerated by a toleration without
// tolerationSeconds never evicts. ok is false when nothing evicts. Of several taints, the
// earliest eviction wins. Taints of other effects are not looked at.
func NoExecuteEviction(taints []corev1.Taint, tolerations []corev1.Toleration, seen time.Time) (ev Eviction, ok bool) {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		cur, evicts := evictionFor(t, tolerations, seen)
		if !evicts {
			continue
		}
		if !ok || cur.At.Before(ev.At) {
			ev, ok = cur, true
		}
	}
	return ev, ok
}

func evictionFor(t *corev1.Taint, tolerations []corev1.Toleration, seen time.Time) (Eviction, bool) {
	var fewest *int64
	for i := range tolerations {
		tol := &tolerations[i]
		if !tol.ToleratesTaint(logr.Discard(), t, true) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return Eviction{}, false // tolerated for ever
		}
		if fewest == nil || *tol.TolerationSeconds < *fewest {
			fewest = tol.TolerationSeconds
		}
	}
	if fewest == nil {
		return Eviction{Taint: *t}, true
	}
	added := seen
	if t.TimeAdded != nil {
		added = t.TimeAdded.Time
	}
	return Eviction{At: added.Add(time.Duration(max(*fewest, 0)) * time.Second), Taint: *t, Tolerated: true}, true
}

func tolerates(tolerations []corev1.Toleration, t *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), t, true) {
			return true
		}
	}
	return false
}

// Describe names a taint as kubectl does: key=value:Effect, or key:Effect.
func Describe(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}
