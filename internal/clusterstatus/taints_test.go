package clusterstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

func TestSyncReadyTaints(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	user := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	notReady := func(at metav1.Time) corev1.Taint {
		return corev1.Taint{Key: wellknown.TaintClusterNotReady, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &at}
	}
	unreachable := func(at metav1.Time) corev1.Taint {
		return corev1.Taint{Key: wellknown.TaintClusterUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &at}
	}
	tests := []struct {
		name    string
		in      []corev1.Taint
		ready   metav1.ConditionStatus
		want    []corev1.Taint
		changed bool
	}{
		{"ready and clean", []corev1.Taint{user}, metav1.ConditionTrue, []corev1.Taint{user}, false},
		{"not ready adds not-ready", []corev1.Taint{user}, metav1.ConditionFalse, []corev1.Taint{user, notReady(now)}, true},
		{"not ready keeps TimeAdded", []corev1.Taint{notReady(earlier), user}, metav1.ConditionFalse, []corev1.Taint{notReady(earlier), user}, false},
		{"unknown swaps not-ready for unreachable", []corev1.Taint{notReady(earlier), user}, metav1.ConditionUnknown, []corev1.Taint{user, unreachable(now)}, true},
		{"ready removes both", []corev1.Taint{unreachable(earlier), user, notReady(earlier)}, metav1.ConditionTrue, []corev1.Taint{user}, true},
		{"ready with nothing stays nil", nil, metav1.ConditionTrue, nil, false},
		{"a NoExecute taint of the same key is someone else's", []corev1.Taint{{Key: wellknown.TaintClusterNotReady, Effect: corev1.TaintEffectNoExecute}}, metav1.ConditionTrue,
			[]corev1.Taint{{Key: wellknown.TaintClusterNotReady, Effect: corev1.TaintEffectNoExecute}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]corev1.Taint(nil), tt.in...)
			got, changed := SyncReadyTaints(tt.in, tt.ready, now, false)
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(in, tt.in); diff != "" {
				t.Errorf("input modified (-before +after):\n%s", diff)
			}
		})
	}
}
