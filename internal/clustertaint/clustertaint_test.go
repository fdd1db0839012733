package clustertaint_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clustertaint"
)

var (
	then = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now  = metav1.NewTime(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
)

func cluster(name string, labels map[string]string, conds map[string]metav1.ConditionStatus, taints ...corev1.Taint) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	c.Spec.Taints = taints
	// Conditions in a fixed order (map order is random).
	for _, t := range []string{"Ready", "SchedulerDown", "NetworkUnavailable"} {
		if s, ok := conds[t]; ok {
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: "Test"})
		}
	}
	return c
}

func cond(t string, op policyv1alpha1.MatchConditionOperator, values ...metav1.ConditionStatus) policyv1alpha1.MatchCondition {
	return policyv1alpha1.MatchCondition{ConditionType: t, Operator: op, StatusValues: values}
}

func policy(name string, target *policyv1alpha1.ClusterAffinity, add, remove []policyv1alpha1.MatchCondition, taints ...policyv1alpha1.Taint) policyv1alpha1.ClusterTaintPolicy {
	return policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			TargetClusters: target, AddOnConditions: add, RemoveOnConditions: remove, Taints: taints,
		},
	}
}

func ptaint(key string, effect corev1.TaintEffect) policyv1alpha1.Taint {
	return policyv1alpha1.Taint{Key: key, Effect: effect}
}

func taint(key string, effect corev1.TaintEffect, at metav1.Time) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect, TimeAdded: &at}
}

const (
	T = metav1.ConditionTrue
	F = metav1.ConditionFalse
	U = metav1.ConditionUnknown

	In    = policyv1alpha1.MatchConditionOpIn
	NotIn = policyv1alpha1.MatchConditionOpNotIn

	NoExec  = corev1.TaintEffectNoExecute
	NoSched = corev1.TaintEffectNoSchedule
)

// readyFalseNoExecute adds failed:NoExecute while Ready is False and removes it when Ready
// is True.
func readyFalseNoExecute(name string, target *policyv1alpha1.ClusterAffinity) policyv1alpha1.ClusterTaintPolicy {
	return policy(name, target,
		[]policyv1alpha1.MatchCondition{cond("Ready", In, F)},
		[]policyv1alpha1.MatchCondition{cond("Ready", In, T)},
		ptaint("failed", NoExec))
}

func TestEvaluate(t *testing.T) {
	system := taint("cluster.karmada.io/not-ready", NoSched, then)
	cases := []struct {
		name     string
		cluster  *clusterv1alpha1.Cluster
		policies []policyv1alpha1.ClusterTaintPolicy
		taints   []corev1.Taint
		changes  []string
	}{
		{
			name:     "adds on Ready=False with TimeAdded now, after the taints already there",
			cluster:  cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}, system),
			policies: []policyv1alpha1.ClusterTaintPolicy{readyFalseNoExecute("p", nil)},
			taints:   []corev1.Taint{system, taint("failed", NoExec, now)},
			changes:  []string{"ClusterTaintPolicy p added taint failed:NoExecute because Ready is False"},
		},
		{
			name:     "keeps a taint already there, with its TimeAdded",
			cluster:  cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}, taint("failed", NoExec, then)),
			policies: []policyv1alpha1.ClusterTaintPolicy{readyFalseNoExecute("p", nil)},
			taints:   []corev1.Taint{taint("failed", NoExec, then)},
		},
		{
			name:     "removes on Ready=True and leaves taints no policy names",
			cluster:  cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": T}, taint("failed", NoExec, then), system),
			policies: []policyv1alpha1.ClusterTaintPolicy{readyFalseNoExecute("p", nil)},
			taints:   []corev1.Taint{system},
			changes:  []string{"ClusterTaintPolicy p removed taint failed:NoExecute because Ready is True"},
		},
		{
			name:     "Ready=Unknown matches neither",
			cluster:  cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": U}, taint("failed", NoExec, then)),
			policies: []policyv1alpha1.ClusterTaintPolicy{readyFalseNoExecute("p", nil)},
			taints:   []corev1.Taint{taint("failed", NoExec, then)},
		},
		{
			name:     "a condition the cluster does not report matches neither In nor NotIn",
			cluster:  cluster("m1", nil, nil),
			policies: []policyv1alpha1.ClusterTaintPolicy{policy("p", nil, []policyv1alpha1.MatchCondition{cond("Ready", NotIn, T)}, nil, ptaint("failed", NoExec))},
			taints:   []corev1.Taint{},
		},
		{
			name:     "NotIn matches the other statuses",
			cluster:  cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": U}),
			policies: []policyv1alpha1.ClusterTaintPolicy{policy("p", nil, []policyv1alpha1.MatchCondition{cond("Ready", NotIn, T)}, nil, ptaint("failed", NoExec))},
			taints:   []corev1.Taint{taint("failed", NoExec, now)},
			changes:  []string{"ClusterTaintPolicy p added taint failed:NoExecute because Ready is Unknown"},
		},
		{
			name:    "conditions are ANDed",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": T, "SchedulerDown": T}),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				policy("both", nil, []policyv1alpha1.MatchCondition{cond("Ready", In, T), cond("SchedulerDown", In, T)}, nil, ptaint("sched", NoSched)),
				policy("one-fails", nil, []policyv1alpha1.MatchCondition{cond("Ready", In, T), cond("SchedulerDown", In, F)}, nil, ptaint("never", NoSched)),
			},
			taints:  []corev1.Taint{taint("sched", NoSched, now)},
			changes: []string{"ClusterTaintPolicy both added taint sched:NoSchedule because Ready is True, SchedulerDown is True"},
		},
		{
			name:    "empty conditions never add nor remove",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}, taint("stay", NoSched, then)),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				policy("no-conditions", nil, nil, nil, ptaint("stay", NoSched), ptaint("new", NoSched)),
			},
			taints: []corev1.Taint{taint("stay", NoSched, then)},
		},
		{
			name:    "add is evaluated before remove: when both match the taint ends removed",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}, taint("failed", NoExec, then)),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				policy("p", nil, []policyv1alpha1.MatchCondition{cond("Ready", In, F)}, []policyv1alpha1.MatchCondition{cond("Ready", NotIn, T)}, ptaint("failed", NoExec)),
			},
			taints:  []corev1.Taint{},
			changes: []string{"ClusterTaintPolicy p removed taint failed:NoExecute because Ready is False"},
		},
		{
			name:    "add then remove of a new taint is no change",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				policy("p", nil, []policyv1alpha1.MatchCondition{cond("Ready", In, F)}, []policyv1alpha1.MatchCondition{cond("Ready", NotIn, T)}, ptaint("failed", NoExec)),
			},
			taints: []corev1.Taint{},
		},
		{
			name:    "targetClusters by label: other clusters are left alone",
			cluster: cluster("m2", map[string]string{"tier": "silver"}, map[string]metav1.ConditionStatus{"Ready": F}),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				readyFalseNoExecute("p", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}),
			},
			taints: []corev1.Taint{},
		},
		{
			name:    "targetClusters by label: the labelled cluster is tainted",
			cluster: cluster("m3", map[string]string{"tier": "gold"}, map[string]metav1.ConditionStatus{"Ready": F}),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				readyFalseNoExecute("p", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}),
			},
			taints:  []corev1.Taint{taint("failed", NoExec, now)},
			changes: []string{"ClusterTaintPolicy p added taint failed:NoExecute because Ready is False"},
		},
		{
			name:    "a cluster that no longer matches targetClusters keeps its taints",
			cluster: cluster("m2", nil, map[string]metav1.ConditionStatus{"Ready": T}, taint("failed", NoExec, then)),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				readyFalseNoExecute("p", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}),
			},
			taints: []corev1.Taint{taint("failed", NoExec, then)},
		},
		{
			name:    "two policies, applied in name order whatever the input order",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F, "NetworkUnavailable": T}),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				policy("b-network", nil, []policyv1alpha1.MatchCondition{cond("NetworkUnavailable", In, T)}, nil, ptaint("net", NoSched)),
				readyFalseNoExecute("a-ready", nil),
			},
			taints: []corev1.Taint{taint("failed", NoExec, now), taint("net", NoSched, now)},
			changes: []string{
				"ClusterTaintPolicy a-ready added taint failed:NoExecute because Ready is False",
				"ClusterTaintPolicy b-network added taint net:NoSchedule because NetworkUnavailable is True",
			},
		},
		{
			name:    "a later policy removes what an earlier one added: no net change",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				readyFalseNoExecute("a", nil),
				policy("b", nil, nil, []policyv1alpha1.MatchCondition{cond("Ready", In, F)}, ptaint("failed", NoExec)),
			},
			taints: []corev1.Taint{},
		},
		{
			name:    "removed by one policy and added again by a later one keeps its place and TimeAdded",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}, taint("failed", NoExec, then), system),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				policy("a", nil, nil, []policyv1alpha1.MatchCondition{cond("Ready", In, F)}, ptaint("failed", NoExec)),
				readyFalseNoExecute("b", nil),
				policy("c", nil, []policyv1alpha1.MatchCondition{cond("Ready", In, F)}, nil, ptaint("other", NoSched)),
			},
			taints:  []corev1.Taint{taint("failed", NoExec, then), system, taint("other", NoSched, now)},
			changes: []string{"ClusterTaintPolicy c added taint other:NoSchedule because Ready is False"},
		},
		{
			name:    "a taint is key and effect: the same key with another effect is another taint; a value is kept",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}, corev1.Taint{Key: "failed", Value: "old", Effect: NoExec}),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				policy("p", nil, []policyv1alpha1.MatchCondition{cond("Ready", In, F)}, nil,
					policyv1alpha1.Taint{Key: "failed", Value: "new", Effect: NoExec}, policyv1alpha1.Taint{Key: "failed", Value: "v", Effect: NoSched}),
			},
			taints:  []corev1.Taint{{Key: "failed", Value: "old", Effect: NoExec}, {Key: "failed", Value: "v", Effect: NoSched, TimeAdded: &now}},
			changes: []string{"ClusterTaintPolicy p added taint failed=v:NoSchedule because Ready is False"},
		},
		{
			name:    "an invalid targetClusters skips that policy only",
			cluster: cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F}),
			policies: []policyv1alpha1.ClusterTaintPolicy{
				readyFalseNoExecute("bad", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}),
				readyFalseNoExecute("good", nil),
			},
			taints:  []corev1.Taint{taint("failed", NoExec, now)},
			changes: []string{"ClusterTaintPolicy good added taint failed:NoExecute because Ready is False"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cluster.DeepCopy()
			policiesBefore := make([]policyv1alpha1.ClusterTaintPolicy, len(tc.policies))
			for i := range tc.policies {
				tc.policies[i].DeepCopyInto(&policiesBefore[i])
			}
			res := clustertaint.Evaluate(tc.cluster, tc.policies, now)
			if d := cmp.Diff(tc.taints, res.Taints); d != "" {
				t.Errorf("taints (-want +got):\n%s", d)
			}
			var got []string
			for _, c := range res.Changes {
				got = append(got, c.String())
			}
			if d := cmp.Diff(tc.changes, got); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
			if res.Changed() != (len(tc.changes) > 0) {
				t.Errorf("Changed() = %v with changes %v", res.Changed(), got)
			}
			if d := cmp.Diff(before, tc.cluster); d != "" {
				t.Errorf("the cluster was modified (-before +after):\n%s", d)
			}
			if d := cmp.Diff(policiesBefore, tc.policies); d != "" {
				t.Errorf("the policies were modified (-before +after):\n%s", d)
			}
		})
	}
}

func TestEvaluateReportsInvalidTargetClusters(t *testing.T) {
	bad := readyFalseNoExecute("bad", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}})
	res := clustertaint.Evaluate(cluster("m1", nil, nil), []policyv1alpha1.ClusterTaintPolicy{bad}, now)
	if len(res.Errors) != 1 || res.Errors[0].Policy != "bad" {
		t.Fatalf("Errors = %v, want one for policy bad", res.Errors)
	}
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "ClusterTaintPolicy bad: targetClusters: labelSelector:") {
		t.Errorf("Err() = %v, want it to name the policy and its targetClusters.labelSelector", err)
	}
	ok := clustertaint.Evaluate(cluster("m1", nil, nil), []policyv1alpha1.ClusterTaintPolicy{readyFalseNoExecute("good", nil)}, now)
	if ok.Err() != nil {
		t.Errorf("Err() = %v for a valid policy", ok.Err())
	}
}

func TestEvaluateIsDeterministic(t *testing.T) {
	c := cluster("m1", nil, map[string]metav1.ConditionStatus{"Ready": F, "NetworkUnavailable": T}, taint("x", NoSched, then))
	ps := []policyv1alpha1.ClusterTaintPolicy{
		policy("c", nil, []policyv1alpha1.MatchCondition{cond("NetworkUnavailable", In, T)}, nil, ptaint("c1", NoSched), ptaint("c2", NoExec)),
		readyFalseNoExecute("a", nil),
		policy("b", nil, []policyv1alpha1.MatchCondition{cond("Ready", NotIn, T)}, nil, ptaint("b1", corev1.TaintEffectPreferNoSchedule)),
	}
	want := clustertaint.Evaluate(c, ps, now)
	for i := range 20 {
		// Rotate the input order.
		rotated := append(append([]policyv1alpha1.ClusterTaintPolicy{}, ps[i%3:]...), ps[:i%3]...)
		if d := cmp.Diff(want, clustertaint.Evaluate(c, rotated, now)); d != "" {
			t.Fatalf("order %d differs (-first +now):\n%s", i, d)
		}
	}
	var keys []string
	for _, tt := range want.Taints {
		keys = append(keys, tt.Key)
	}
	if d := cmp.Diff([]string{"x", "failed", "b1", "c1", "c2"}, keys); d != "" {
		t.Errorf("taint order (-want +got):\n%s", d)
	}
}
