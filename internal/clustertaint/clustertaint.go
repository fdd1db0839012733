// Package clustertaint decides which taints ClusterTaintPolicies put on a Cluster: a pure
// function of the Cluster (labels, fields, conditions, taints) and the policies.
//
// Policies are applied one after the other in name order. For a policy whose
// targetClusters select the Cluster: when every addOnCondition matches, its taints that the
// Cluster lacks are appended; then, when every removeOnCondition matches, its taints are
// removed. An empty list of conditions never matches. A taint is identified by its key and
// effect: one already there (added by anyone) is kept as it is, with its value and
// TimeAdded. Taints no policy names are never touched, nor are the taints of Clusters a
// policy does not target.
package clustertaint

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
)

// Action is what a policy did to a taint.
type Action string

// The actions.
const (
	Added   Action = "Added"
	Removed Action = "Removed"
)

// Change is one taint a policy added or removed.
type Change struct {
	// Policy is the name of the ClusterTaintPolicy.
	Policy string
	// Action says whether the taint was added or removed.
	Action Action
	// Taint is the taint as it is now on the Cluster (Added) or as it was (Removed).
	Taint corev1.Taint
	// Because describes the conditions that matched, for example "Ready is False".
	Because string
}

// String describes the change for an event, for example "ClusterTaintPolicy p added taint
// k:NoExecute because Ready is False".
func (c Change) String() string {
	verb := "added"
	if c.Action == Removed {
		verb = "removed"
	}
	return fmt.Sprintf("ClusterTaintPolicy %s %s taint %s because %s", c.Policy, verb, TaintString(c.Taint), c.Because)
}

// TaintString is key[=value]:effect, as kubectl taint writes it.
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// PolicyError says why a policy was skipped.
type PolicyError struct {
	Policy string
	Err    error
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("ClusterTaintPolicy %s: %v", e.Policy, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }

// Result is the outcome of Evaluate.
type Result struct {
	// Taints is the Cluster's new taint list. It shares no memory with the input.
	Taints []corev1.Taint
	// Changes are the net changes from the input, in the order they were made: a taint one
	// policy added and a later one removed is not reported.
	Changes []Change
	// Errors are the policies that were skipped (their targetClusters cannot be evaluated),
	// in name order; errors.Join of them is the error of the evaluation.
	Errors []*PolicyError
}

// Changed reports whether the taints differ from the input.
func (r Result) Changed() bool { return len(r.Changes) > 0 }

// Err joins the policy errors, nil when there are none.
func (r Result) Err() error {
	errs := make([]error, 0, len(r.Errors))
	for _, e := range r.Errors {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

type taintID struct {
	key    string
	effect corev1.TaintEffect
}

func idOf(t corev1.Taint) taintID { return taintID{t.Key, t.Effect} }

// Evaluate applies the policies to the cluster's taints. New taints get TimeAdded now;
// taints that stay keep theirs. The policies are not modified and may be in any order.
func Evaluate(cluster *clusterv1alpha1.Cluster, policies []policyv1alpha1.ClusterTaintPolicy, now metav1.Time) Result {
	var res Result
	taints := make([]corev1.Taint, 0, len(cluster.Spec.Taints))
	for _, t := range cluster.Spec.Taints {
		taints = append(taints, *t.DeepCopy())
	}
	original := map[taintID]bool{}
	for _, t := range taints {
		original[idOf(t)] = true
	}

	ordered := make([]*policyv1alpha1.ClusterTaintPolicy, 0, len(policies))
	for i := range policies {
		ordered = append(ordered, &policies[i])
	}
	slices.SortStableFunc(ordered, func(a, b *policyv1alpha1.ClusterTaintPolicy) int { return strings.Compare(a.Name, b.Name) })

	var changes []Change
	for _, p := range ordered {
		m, err := clusteraffinity.Compile(p.Spec.TargetClusters)
		if err != nil {
			res.Errors = append(res.Errors, &PolicyError{Policy: p.Name, Err: fmt.Errorf("targetClusters: %w", err)})
			continue
		}
		if !m.Matches(cluster) {
			continue
		}
		if because, ok := Matches(cluster.Status.Conditions, p.Spec.AddOnConditions); ok {
			for _, pt := range p.Spec.Taints {
				t := corev1.Taint{Key: pt.Key, Value: pt.Value, Effect: pt.Effect}
				if slices.ContainsFunc(taints, func(c corev1.Taint) bool { return idOf(c) == idOf(t) }) {
					continue
				}
				added := now
				t.TimeAdded = &added
				taints = append(taints, t)
				changes = append(changes, Change{Policy: p.Name, Action: Added, Taint: t, Because: because})
			}
		}
		if because, ok := Matches(cluster.Status.Conditions, p.Spec.RemoveOnConditions); ok {
			for _, pt := range p.Spec.Taints {
				id := taintID{pt.Key, pt.Effect}
				i := slices.IndexFunc(taints, func(c corev1.Taint) bool { return idOf(c) == id })
				if i < 0 {
					continue
				}
				changes = append(changes, Change{Policy: p.Name, Action: Removed, Taint: taints[i], Because: because})
				taints = slices.DeleteFunc(taints, func(c corev1.Taint) bool { return idOf(c) == id })
			}
		}
	}

	// Keep the last change of each taint whose presence differs from the input.
	final := map[taintID]bool{}
	for _, t := range taints {
		final[idOf(t)] = true
	}
	last := map[taintID]int{}
	for i, c := range changes {
		last[idOf(c.Taint)] = i
	}
	for i, c := range changes {
		id := idOf(c.Taint)
		if last[id] == i && original[id] != final[id] {
			res.Changes = append(res.Changes, c)
		}
	}
	// The input's taints that remain keep their place, value and TimeAdded (one a policy
	// removed and a later one added again is the same taint); new ones follow in the order
	// they were added.
	res.Taints = make([]corev1.Taint, 0, len(taints))
	for _, t := range cluster.Spec.Taints {
		if final[idOf(t)] {
			res.Taints = append(res.Taints, *t.DeepCopy())
		}
	}
	for _, t := range taints {
		if !original[idOf(t)] {
			res.Taints = append(res.Taints, t)
		}
	}
	return res
}

// Matches reports whether conditions match every MatchCondition, and says which statuses
// made them match ("Ready is False, NetworkUnavailable is True"). An empty list never
// matches, and neither does a MatchCondition whose condition is not among conditions.
func Matches(conditions []metav1.Condition, mcs []policyv1alpha1.MatchCondition) (string, bool) {
	if len(mcs) == 0 {
		return "", false
	}
	parts := make([]string, 0, len(mcs))
	for _, mc := range mcs {
		c := meta.FindStatusCondition(conditions, mc.ConditionType)
		if c == nil {
			return "", false
		}
		in := slices.Contains(mc.StatusValues, c.Status)
		switch mc.Operator {
		case policyv1alpha1.MatchConditionOpIn:
			if !in {
				return "", false
			}
		case policyv1alpha1.MatchConditionOpNotIn:
			if in {
				return "", false
			}
		default: // the CRD admits only In and NotIn
			return "", false
		}
		parts = append(parts, fmt.Sprintf("%s is %s", c.Type, c.Status))
	}
	return strings.Join(parts, ", "), true
}
