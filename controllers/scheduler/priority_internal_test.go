package scheduler

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/handler"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

func TestQueuePriority(t *testing.T) {
	for _, tc := range []struct {
		name string
		sp   *workv1alpha2.SchedulePriority
		want int
	}{
		{"none", nil, 0},
		{"high", &workv1alpha2.SchedulePriority{Priority: 1000000}, 1000000},
		{"negative", &workv1alpha2.SchedulePriority{Priority: -5}, -5},
		{"never behind resyncs", &workv1alpha2.SchedulePriority{Priority: -2147483648}, handler.LowPriority + 1},
		{"system critical", &workv1alpha2.SchedulePriority{Priority: 2000001000}, 2000001000},
	} {
		rb := &workv1alpha2.ResourceBinding{Spec: workv1alpha2.ResourceBindingSpec{SchedulePriority: tc.sp}}
		if got := QueuePriority(rb); got != tc.want {
			t.Errorf("%s: QueuePriority = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestInitialPriority(t *testing.T) {
	for _, tc := range []struct {
		name string
		sp   *workv1alpha2.SchedulePriority
		want int
	}{
		{"none: behind what is created meanwhile", nil, -1},
		{"negative: behind it too, and behind the initial ones of the default", &workv1alpha2.SchedulePriority{Priority: -5}, -6},
		{"lowest: with the resyncs", &workv1alpha2.SchedulePriority{Priority: -2147483648}, handler.LowPriority},
		{"high: keeps its place, highest first", &workv1alpha2.SchedulePriority{Priority: 1000}, 1000},
	} {
		rb := &workv1alpha2.ResourceBinding{Spec: workv1alpha2.ResourceBindingSpec{SchedulePriority: tc.sp}}
		if got := initialPriority(rb); got != tc.want {
			t.Errorf("%s: initialPriority = %d, want %d", tc.name, got, tc.want)
		}
	}
}
