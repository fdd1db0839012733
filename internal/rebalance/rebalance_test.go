package rebalance

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
)

func wl(name string) appsv1alpha1.Workload {
	return appsv1alpha1.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: name}
}

func ok(name string) appsv1alpha1.ObservedWorkload {
	return appsv1alpha1.ObservedWorkload{Workload: wl(name), Result: appsv1alpha1.RebalanceSuccessful}
}

func TestPlan(t *testing.T) {
	failed := appsv1alpha1.ObservedWorkload{Workload: wl("b"), Result: appsv1alpha1.RebalanceFailed, Reason: appsv1alpha1.RebalanceReferencedBindingNotFound}
	tests := []struct {
		name        string
		workloads   []appsv1alpha1.Workload
		observed    []appsv1alpha1.ObservedWorkload
		wantKept    []appsv1alpha1.ObservedWorkload
		wantPending []appsv1alpha1.Workload
	}{
		{"new rebalancer", []appsv1alpha1.Workload{wl("a"), wl("b")}, nil, nil, []appsv1alpha1.Workload{wl("a"), wl("b")}},
		{"duplicates are triggered once", []appsv1alpha1.Workload{wl("a"), wl("a")}, nil, nil, []appsv1alpha1.Workload{wl("a")}},
		{"results are kept, Failed ones too", []appsv1alpha1.Workload{wl("a"), wl("b")}, []appsv1alpha1.ObservedWorkload{failed, ok("a")},
			[]appsv1alpha1.ObservedWorkload{ok("a"), failed}, nil},
		{"a workload added later is pending", []appsv1alpha1.Workload{wl("a"), wl("c")}, []appsv1alpha1.ObservedWorkload{ok("a")},
			[]appsv1alpha1.ObservedWorkload{ok("a")}, []appsv1alpha1.Workload{wl("c")}},
		{"a workload removed from the spec loses its result", []appsv1alpha1.Workload{wl("b")}, []appsv1alpha1.ObservedWorkload{ok("a")},
			nil, []appsv1alpha1.Workload{wl("b")}},
		{"an entry without a result is pending", []appsv1alpha1.Workload{wl("a")}, []appsv1alpha1.ObservedWorkload{{Workload: wl("a")}},
			nil, []appsv1alpha1.Workload{wl("a")}},
		{"a namespace makes another workload", []appsv1alpha1.Workload{{APIVersion: "apps/v1", Kind: "Deployment", Name: "a"}}, []appsv1alpha1.ObservedWorkload{ok("a")},
			nil, []appsv1alpha1.Workload{{APIVersion: "apps/v1", Kind: "Deployment", Name: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, pending := Plan(tt.workloads, tt.observed)
			if diff := cmp.Diff(tt.wantKept, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPending, pending); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
			if got, want := Finished(tt.workloads, tt.observed), len(tt.wantPending) == 0; got != want {
				t.Errorf("Finished = %v, want %v", got, want)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	finish := metav1.NewTime(time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC))
	if _, ok := Expiry(nil, ptr.To[int32](5)); ok {
		t.Error("an unfinished rebalancer expires")
	}
	if _, ok := Expiry(&finish, nil); ok {
		t.Error("a rebalancer without a TTL expires")
	}
	if at, ok := Expiry(&finish, ptr.To[int32](5)); !ok || !at.Equal(finish.Add(5*time.Second)) {
		t.Errorf("Expiry = %v, %v; want finish+5s", at, ok)
	}
	if at, ok := Expiry(&finish, ptr.To[int32](-3)); !ok || !at.Equal(finish.Time) {
		t.Errorf("Expiry with a negative TTL = %v, %v; want finish", at, ok)
	}
}

func TestTriggerTime(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC))
	earlier, later := metav1.NewTime(created.Add(-time.Second)), metav1.NewTime(created.Add(time.Second))
	for _, tc := range []struct {
		name    string
		current *metav1.Time
		want    bool
	}{{"unset", nil, true}, {"earlier", &earlier, true}, {"same", &created, false}, {"later", &later, false}} {
		at, ok := TriggerTime(created, tc.current)
		if ok != tc.want || (ok && !at.Equal(&created)) {
			t.Errorf("%s: TriggerTime = %v, %v; want %v", tc.name, at, ok, tc.want)
		}
	}
}
