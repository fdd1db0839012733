package descheduler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

func targets(kv ...any) []workv1alpha2.TargetCluster {
	var out []workv1alpha2.TargetCluster
	for i := 0; i < len(kv); i += 2 {
		out = append(out, workv1alpha2.TargetCluster{Name: kv[i].(string), Replicas: int32(kv[i+1].(int))})
	}
	return out
}

func spec(kind string, rs *policyv1alpha1.ReplicaSchedulingStrategy, clusters ...any) *workv1alpha2.ResourceBindingSpec {
	s := &workv1alpha2.ResourceBindingSpec{
		Resource:  workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: kind, Namespace: "ns", Name: "web"},
		Placement: &policyv1alpha1.Placement{ReplicaScheduling: rs},
		Clusters:  targets(clusters...),
	}
	for _, tc := range s.Clusters {
		s.Replicas += tc.Replicas
	}
	return s
}

func dynamic() *policyv1alpha1.ReplicaSchedulingStrategy {
	return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}}
}

func aggregated() *policyv1alpha1.ReplicaSchedulingStrategy {
	return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}
}

func static() *policyv1alpha1.ReplicaSchedulingStrategy {
	return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted}
}

func TestPlan(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	old := Unschedulable{Replicas: 2, Since: t0}
	tests := []struct {
		name string
		in   Input
		want Decision
	}{{
		name: "nothing unschedulable: nothing to say",
		in:   Input{Spec: spec("Deployment", dynamic(), "a", 3, "b", 2), Ready: map[string]int32{"a": 3, "b": 2}},
	}, {
		name: "dynamic weights: the unschedulable replicas of a cluster move",
		in: Input{Spec: spec("Deployment", dynamic(), "a", 3, "b", 2), Unschedulable: map[string]Unschedulable{"a": old},
			Ready: map[string]int32{"a": 1, "b": 2}},
		want: Decision{Take: map[string]int32{"a": 2}},
	}, {
		name: "aggregated, several clusters",
		in: Input{Spec: spec("ReplicaSet", aggregated(), "a", 3, "b", 2),
			Unschedulable: map[string]Unschedulable{"a": old, "b": {Replicas: 1, Since: t0}}, Ready: map[string]int32{"a": 1, "b": 1}},
		want: Decision{Take: map[string]int32{"a": 2, "b": 1}},
	}, {
		name: "never below what is ready: a stale report after a move takes nothing",
		in: Input{Spec: spec("Deployment", dynamic(), "a", 1, "b", 4), Unschedulable: map[string]Unschedulable{"a": old},
			Ready: map[string]int32{"a": 1, "b": 4}},
		want: Decision{Why: "a: all 1 replicas are ready"},
	}, {
		name: "never below what is ready: fewer than reported",
		in: Input{Spec: spec("Deployment", dynamic(), "a", 3), Unschedulable: map[string]Unschedulable{"a": old},
			Ready: map[string]int32{"a": 2}},
		want: Decision{Take: map[string]int32{"a": 1}},
	}, {
		name: "a rollout under way: nothing moves",
		in: Input{Spec: spec("Deployment", dynamic(), "a", 3), Unschedulable: map[string]Unschedulable{"a": old},
			Ready: map[string]int32{"a": 1}, RollingOut: map[string]bool{"a": true}},
		want: Decision{Why: "a: a rollout is under way"},
	}, {
		name: "no ready count reported: nothing moves",
		in:   Input{Spec: spec("Deployment", dynamic(), "a", 3), Unschedulable: map[string]Unschedulable{"a": old}},
		want: Decision{Why: "a: no ready count reported"},
	}, {
		name: "unschedulable for less than the threshold: looked at again when it is due",
		in: Input{Spec: spec("Deployment", dynamic(), "a", 3), Unschedulable: map[string]Unschedulable{"a": {Replicas: 2, Since: now.Add(-time.Minute)}},
			Ready: map[string]int32{"a": 1}},
		want: Decision{Why: "a: unschedulable for less than 5m0s", RecheckAt: now.Add(4 * time.Minute)},
	}, {
		name: "a cluster not in the placement is not looked at",
		in: Input{Spec: spec("Deployment", dynamic(), "a", 3), Unschedulable: map[string]Unschedulable{"gone": old},
			Ready: map[string]int32{"a": 1}},
	}, {
		name: "static weights are the user's",
		in:   Input{Spec: spec("Deployment", static(), "a", 3), Unschedulable: map[string]Unschedulable{"a": old}, Ready: map[string]int32{"a": 1}},
		want: Decision{Why: "its placement divides the replicas by static weights", Ineligible: true},
	}, {
		name: "duplicated is the user's",
		in:   Input{Spec: spec("Deployment", nil, "a", 3), Unschedulable: map[string]Unschedulable{"a": old}, Ready: map[string]int32{"a": 1}},
		want: Decision{Why: "its placement is Duplicated: every cluster runs all the replicas", Ineligible: true},
	}, {
		name: "a StatefulSet would lose its highest ordinals, running or not",
		in:   Input{Spec: spec("StatefulSet", dynamic(), "a", 3), Unschedulable: map[string]Unschedulable{"a": old}, Ready: map[string]int32{"a": 1}},
		want: Decision{Why: "a StatefulSet does not remove its unschedulable Pods first when it scales down", Ineligible: true},
	}, {
		name: "not steady",
		in: Input{Spec: spec("Deployment", dynamic(), "a", 3), Unsteady: "an eviction is under way",
			Unschedulable: map[string]Unschedulable{"a": old}, Ready: map[string]int32{"a": 1}},
		want: Decision{Why: "an eviction is under way"},
	}, {
		name: "moved a moment ago: the new replicas settle first",
		in: Input{Spec: spec("Deployment", dynamic(), "a", 3), LastMove: now.Add(-time.Minute),
			Unschedulable: map[string]Unschedulable{"a": old}, Ready: map[string]int32{"a": 1}},
		want: Decision{Why: "its replicas moved at 2026-01-01T10:09:00Z; the new ones settle first", RecheckAt: now.Add(4 * time.Minute)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now, tt.in.Threshold = now, DefaultThreshold
			if diff := cmp.Diff(tt.want, Plan(tt.in)); diff != "" {
				t.Errorf("Plan() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFewerAndReduce(t *testing.T) {
	take := map[string]int32{"b": 2, "a": 1, "c": 3}
	if diff := cmp.Diff(map[string]int32{"a": 1, "b": 2, "c": 1}, Fewer(take, 4)); diff != "" {
		t.Errorf("Fewer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(targets("a", 2, "c", 1), Reduce(targets("a", 3, "b", 2, "c", 1), map[string]int32{"a": 1, "b": 2})); diff != "" {
		t.Errorf("Reduce (-want +got):\n%s", diff)
	}
	if got := Describe(take); got != "a (1), b (2), c (3)" {
		t.Errorf("Describe = %q", got)
	}
}

func TestCheckNoDip(t *testing.T) {
	take := map[string]int32{"a": 2, "gone": 1}
	reduced := targets("a", 1, "b", 2)
	tests := []struct {
		name   string
		placed []workv1alpha2.TargetCluster
		want   string
	}{
		{"the others take them", targets("a", 1, "b", 3, "c", 2), ""},
		{"a cluster loses one", targets("a", 1, "b", 1, "c", 4), "cluster b would go from 2 to 1 replicas"},
		{"one comes back", targets("a", 2, "b", 4), "cluster a gives up 2 unschedulable replicas but would get 1 back"},
		{"an emptied cluster comes back", targets("a", 1, "b", 4, "gone", 1), "cluster gone gives up all its replicas but would get 1 back"},
		{"too few in all", targets("a", 1, "b", 3), "the clusters would hold 4 replicas, spec.replicas is 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := CheckNoDip(reduced, tt.placed, take, 6); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckNoDip() = %q, want %q", got, tt.want)
			}
		})
	}
}
