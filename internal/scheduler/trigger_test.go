package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// steady returns a binding scheduled as its placement says, and its clusters.
func steady(t *testing.T) (Input, []*clusterv1alpha1.Cluster) {
	t.Helper()
	spec := st.Deployment(3)
	spec.Placement = &policyv1alpha1.Placement{
		ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1", "m2", "m3"}},
		ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil),
	}
	spec.Clusters = targets("m1", 2, "m2", 1)
	applied, err := AppliedPlacement(spec.Placement)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{
		Spec:        spec,
		Status:      &workv1alpha2.ResourceBindingStatus{LastScheduledTime: &metav1.Time{Time: time.Unix(1000, 0)}},
		Annotations: map[string]string{wellknown.AppliedPlacementAnnotation: applied},
	}
	return in, []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2"), st.NewCluster("m3")}
}

func TestNeedsSchedule(t *testing.T) {
	tests := []struct {
		name       string
		change     func(in *Input, clusters []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster
		want       bool
		wantReason string
	}{
		{"steady", nil, false, ""},
		{"suspended", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
			in.Annotations = nil
			return cs
		}, false, "scheduling is suspended"},
		{"never scheduled", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Annotations = nil
			return cs
		}, true, "never scheduled"},
		{"no clusters yet", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.Clusters = nil
			return cs
		}, true, "never scheduled"},
		{"same placement, other formatting", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Annotations[wellknown.AppliedPlacementAnnotation] = `{ "replicaScheduling": {"replicaDivisionPreference":"Weighted", "replicaSchedulingType":"Divided"},
				"clusterAffinity": {"clusterNames": ["m1","m2","m3"]} }`
			return cs
		}, false, ""},
		{"placement changed", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.Placement.ClusterTolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			return cs
		}, true, "placement changed"},
		{"annotation not JSON", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Annotations[wellknown.AppliedPlacementAnnotation] = "{"
			return cs
		}, true, "the applied-placement annotation is not valid JSON"},
		{"reschedule triggered", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.RescheduleTriggeredAt = &metav1.Time{Time: time.Unix(2000, 0)}
			return cs
		}, true, "reschedule triggered"},
		{"reschedule trigger already served", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.RescheduleTriggeredAt = &metav1.Time{Time: time.Unix(500, 0)}
			return cs
		}, false, ""},
		{"replicas changed", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.Replicas = 5
			return cs
		}, true, "replicas changed: clusters hold 3, spec.replicas is 5"},
		{"duplicated replicas changed", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.Placement.ReplicaScheduling = nil
			in.Spec.Clusters = targets("m1", 3, "m2", 2)
			in.Annotations[wellknown.AppliedPlacementAnnotation], _ = AppliedPlacement(in.Spec.Placement)
			return cs
		}, true, "replicas changed: cluster m2 has 2, spec.replicas is 3"},
		{"cluster gone", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			return cs[1:]
		}, true, "cluster m1 is gone"},
		{"cluster being deleted", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			st.Deleting()(cs[1])
			return cs
		}, true, "cluster m2 is being deleted"},
		{"NoExecute taint is the failover controller's", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			st.Taint("evict", "", corev1.TaintEffectNoExecute)(cs[0])
			return cs
		}, false, ""},
		{"NoSchedule taint does not evict", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			st.Taint(wellknown.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule)(cs[0])
			return cs
		}, false, ""},
		{"affinity no longer matches", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.Clusters = targets("m1", 2, "m4", 1)
			return append(cs, st.NewCluster("m4"))
		}, true, "cluster m4 no longer matches the cluster affinity"},
		{"observed affinity group no longer matches", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			in.Spec.Placement = &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
				{AffinityName: "a", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1", "m2"}}},
				{AffinityName: "b", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}},
			}, ReplicaScheduling: in.Spec.Placement.ReplicaScheduling}
			in.Annotations[wellknown.AppliedPlacementAnnotation], _ = AppliedPlacement(in.Spec.Placement)
			in.Status.SchedulerObservedAffinityName = "b"
			return cs
		}, true, "cluster m2 no longer matches the cluster affinity"},
		{"unrelated cluster changes", func(in *Input, cs []*clusterv1alpha1.Cluster) []*clusterv1alpha1.Cluster {
			st.Deleting()(cs[2])
			return append(cs, st.NewCluster("m9"))
		}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, clusters := steady(t)
			if tt.change != nil {
				clusters = tt.change(&in, clusters)
			}
			got, reason := NeedsSchedule(in, clusters)
			if got != tt.want || reason != tt.wantReason {
				t.Errorf("NeedsSchedule() = %v, %q; want %v, %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestAppliedPlacement(t *testing.T) {
	got, err := AppliedPlacement(nil)
	if err != nil || got != "{}" {
		t.Errorf("AppliedPlacement(nil) = %q, %v; want {}", got, err)
	}
	in, clusters := steady(t)
	in.Spec.Placement, in.Spec.Clusters = nil, targets("m1", 3, "m2", 3)
	in.Annotations[wellknown.AppliedPlacementAnnotation] = "null"
	if need, reason := NeedsSchedule(in, clusters); need {
		t.Errorf("nil placement applied as null: NeedsSchedule() = true, %q", reason)
	}
}
