package scheduler

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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

// addRecorder records the priority of each AddWithOpts, in the order they come.
type addRecorder struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	added []int
}

func (r *addRecorder) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for range items {
		r.added = append(r.added, *o.Priority)
	}
}

// An idle worker takes the first key added at once, before the handler has added the rest:
// the bindings a Cluster's event brings back must be added highest priority first, or the
// first binding the cache's index happens to list is placed first whatever its priority
// (the integration spec "places the bindings that wait together in the order of their
// schedulePriority" failed so, at load average 27).
func TestEnqueueAddsHighestFirst(t *testing.T) {
	var objs []client.Object
	for i, p := range []int32{0, 1000, 5, -3, 200000, 42, 0} {
		rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("b", i)}}
		if p != 0 {
			rb.Spec.SchedulePriority = &workv1alpha2.SchedulePriority{Priority: p}
		}
		objs = append(objs, rb)
	}
	q := &addRecorder{}
	enqueue(q, false, objs...)
	if want := []int{200000, 1000, 42, 5, 0, 0, -3}; !slices.Equal(q.added, want) {
		t.Errorf("added at priorities %v, want %v", q.added, want)
	}
}
