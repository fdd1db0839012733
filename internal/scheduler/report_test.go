package scheduler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

func TestFirstPlacementUnreported(t *testing.T) {
	placed := func() *workv1alpha2.ResourceBindingSpec {
		return &workv1alpha2.ResourceBindingSpec{Placement: &policyv1alpha1.Placement{},
			Clusters: []workv1alpha2.TargetCluster{{Name: "m1", Replicas: 1}}}
	}
	applied := map[string]string{wellknown.AppliedPlacementAnnotation: "{}"}
	scheduled := &workv1alpha2.ResourceBindingStatus{Conditions: []metav1.Condition{ScheduledCondition(placed().Clusters, 1)}}
	for _, tc := range []struct {
		name        string
		generation  int64
		annotations map[string]string
		spec        *workv1alpha2.ResourceBindingSpec
		status      *workv1alpha2.ResourceBindingStatus
		want        bool
	}{
		{"created placed, no status", 1, applied, placed(), &workv1alpha2.ResourceBindingStatus{}, true},
		{"created placed, nil status", 1, applied, placed(), nil, true},
		{"reported already", 1, applied, placed(), scheduled, false},
		{"observed already", 1, applied, placed(), &workv1alpha2.ResourceBindingStatus{SchedulerObservedGeneration: 1}, false},
		{"changed since it was created", 2, applied, placed(), nil, false},
		{"not placed", 1, applied, &workv1alpha2.ResourceBindingSpec{Placement: &policyv1alpha1.Placement{}}, nil, false},
		{"placed without the annotation (not by a scheduler)", 1, nil, placed(), nil, false},
		{"a dependency's binding (no placement)", 1, applied, &workv1alpha2.ResourceBindingSpec{Clusters: placed().Clusters}, nil, false},
		{"no spec", 1, applied, nil, nil, false},
	} {
		if got := FirstPlacementUnreported(tc.generation, tc.annotations, tc.spec, tc.status); got != tc.want {
			t.Errorf("%s: FirstPlacementUnreported = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScheduledCondition(t *testing.T) {
	c := ScheduledCondition([]workv1alpha2.TargetCluster{{Name: "m1", Replicas: 2}, {Name: "m2", Components: []workv1alpha2.ComponentReplicas{{Name: "web", Replicas: 1}}}}, 3)
	if c.Type != wellknown.ConditionScheduled || c.Status != metav1.ConditionTrue || c.Reason != wellknown.ReasonBindingScheduled || c.ObservedGeneration != 3 {
		t.Errorf("condition %+v", c)
	}
	if want := "Binding has been scheduled to m1 (2), m2 (web 1)"; c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}
	if got := DescribeClusters(nil); got != "no cluster" {
		t.Errorf("DescribeClusters(nil) = %q", got)
	}
}
