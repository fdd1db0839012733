package tainttoleration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func TestFilter(t *testing.T) {
	notReady := st.NewCluster("not-ready", st.Taint(wellknown.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule))
	draining := st.NewCluster("draining", st.Taint("drain", "now", corev1.TaintEffectNoExecute))
	preferred := st.NewCluster("preferred", st.Taint("cost", "high", corev1.TaintEffectPreferNoSchedule))
	clean := st.NewCluster("clean")
	all := []string{"not-ready", "draining", "preferred", "clean"}
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		scheduled   []string
		want        map[string]string
	}{
		{"no tolerations", nil, nil, map[string]string{
			"not-ready": "had untolerated taint {cluster.karmada.io/not-ready}",
			"draining":  "had untolerated taint {drain: now}",
			"preferred": "", "clean": "",
		}},
		{"tolerate by key", []corev1.Toleration{{Key: wellknown.TaintClusterNotReady, Operator: corev1.TolerationOpExists}}, nil, map[string]string{
			"not-ready": "", "draining": "had untolerated taint {drain: now}", "preferred": "", "clean": "",
		}},
		{"tolerate by value and effect", []corev1.Toleration{{Key: "drain", Value: "now", Effect: corev1.TaintEffectNoExecute}}, nil, map[string]string{
			"not-ready": "had untolerated taint {cluster.karmada.io/not-ready}", "draining": "", "preferred": "", "clean": "",
		}},
		{"wrong value is not tolerated", []corev1.Toleration{{Key: "drain", Value: "later"}}, nil, map[string]string{
			"not-ready": "had untolerated taint {cluster.karmada.io/not-ready}", "draining": "had untolerated taint {drain: now}", "preferred": "", "clean": "",
		}},
		{"tolerate everything", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, nil, map[string]string{
			"not-ready": "", "draining": "", "preferred": "", "clean": "",
		}},
		{"scheduled clusters stay for NoSchedule and NoExecute (the failover controller evicts)", nil, all, map[string]string{
			"not-ready": "", "draining": "", "preferred": "", "clean": "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := st.Deployment(1)
			spec.Placement = &policyv1alpha1.Placement{ClusterTolerations: tt.tolerations}
			for _, name := range tt.scheduled {
				spec.Clusters = append(spec.Clusters, workv1alpha2.TargetCluster{Name: name, Replicas: 1})
			}
			got, err := st.Reasons(New(), st.State(spec), notReady, draining, preferred, clean)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
