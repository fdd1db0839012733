package clustertaint_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clustertaint"
)

// decoder turns fuzz bytes into small choices; it returns zeros once the bytes run out.
type decoder struct{ b []byte }

func (d *decoder) next(n int) int {
	if len(d.b) == 0 || n <= 0 {
		return 0
	}
	v := int(d.b[0]) % n
	d.b = d.b[1:]
	return v
}

func (d *decoder) pick(ss ...string) string { return ss[d.next(len(ss))] }

var (
	fuzzKeys     = []string{"a", "b", "c", "cluster.karmada.io/not-ready", ""}
	fuzzEffects  = []string{"NoSchedule", "NoExecute", "PreferNoSchedule", "Bogus", ""}
	fuzzTypes    = []string{"Ready", "SchedulerDown", ""}
	fuzzStatuses = []string{"True", "False", "Unknown", "", "maybe"}
	fuzzOps      = []string{"In", "NotIn", "Exists", ""}
)

func (d *decoder) conditions() []policyv1alpha1.MatchCondition {
	var out []policyv1alpha1.MatchCondition
	for range d.next(4) {
		mc := policyv1alpha1.MatchCondition{ConditionType: d.pick(fuzzTypes...), Operator: policyv1alpha1.MatchConditionOperator(d.pick(fuzzOps...))}
		for range d.next(4) {
			mc.StatusValues = append(mc.StatusValues, metav1.ConditionStatus(d.pick(fuzzStatuses...)))
		}
		out = append(out, mc)
	}
	return out
}

// FuzzEvaluate checks that Evaluate never panics, whatever the policies (including ones the
// CRD would reject), and keeps its promises: taints no policy names are untouched, every
// change is real, and evaluating the result again changes nothing more.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{3, 3, 1, 0, 0, 2, 1, 1, 0, 1, 0, 1, 2, 2, 2, 0, 0, 1})
	f.Add([]byte{255, 128, 7, 0, 9, 200, 13, 4, 4, 4, 4, 1, 0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &decoder{b: data}
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: d.pick("m1", "m2"), Labels: map[string]string{"tier": d.pick("gold", "silver")}}}
		for range d.next(4) {
			t := corev1.Taint{Key: d.pick(fuzzKeys...), Effect: corev1.TaintEffect(d.pick(fuzzEffects...))}
			if d.next(2) == 1 {
				t.TimeAdded = &then
			}
			c.Spec.Taints = append(c.Spec.Taints, t)
		}
		for range d.next(4) {
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: d.pick(fuzzTypes...), Status: metav1.ConditionStatus(d.pick(fuzzStatuses...))})
		}
		var policies []policyv1alpha1.ClusterTaintPolicy
		named := map[string]bool{}
		for i := range d.next(4) {
			p := policyv1alpha1.ClusterTaintPolicy{ObjectMeta: metav1.ObjectMeta{Name: d.pick("p", "q", "r") + string(rune('0'+i))}}
			switch d.next(4) {
			case 1:
				p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{ClusterNames: []string{d.pick("m1", "m2")}}
			case 2:
				p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOperator(d.pick("In", "NotIn", "Bogus")), Values: []string{"gold"}}}}}
			case 3:
				p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{}
			}
			p.Spec.AddOnConditions = d.conditions()
			p.Spec.RemoveOnConditions = d.conditions()
			for range d.next(4) {
				pt := policyv1alpha1.Taint{Key: d.pick(fuzzKeys...), Effect: corev1.TaintEffect(d.pick(fuzzEffects...)), Value: d.pick("", "v")}
				p.Spec.Taints = append(p.Spec.Taints, pt)
				named[pt.Key+"\x00"+string(pt.Effect)] = true
			}
			policies = append(policies, p)
		}

		res := clustertaint.Evaluate(c, policies, now)

		count := func(ts []corev1.Taint) map[string]int {
			m := map[string]int{}
			for _, t := range ts {
				m[t.Key+"\x00"+string(t.Effect)]++
			}
			return m
		}
		before, after := count(c.Spec.Taints), count(res.Taints)
		for id, n := range before {
			if !named[id] && after[id] != n {
				t.Errorf("taint %q named by no policy went from %d to %d", id, n, after[id])
			}
		}
		for id, n := range after {
			if !named[id] && before[id] != n {
				t.Errorf("taint %q named by no policy appeared", id)
			}
		}
		for _, ch := range res.Changes {
			id := ch.Taint.Key + "\x00" + string(ch.Taint.Effect)
			switch ch.Action {
			case clustertaint.Added:
				if before[id] != 0 || after[id] != 1 || ch.Taint.TimeAdded == nil || !ch.Taint.TimeAdded.Equal(&now) {
					t.Errorf("change %v: before %d after %d", ch, before[id], after[id])
				}
			case clustertaint.Removed:
				if before[id] == 0 || after[id] != 0 {
					t.Errorf("change %v: before %d after %d", ch, before[id], after[id])
				}
			default:
				t.Errorf("change %v has an unknown action", ch)
			}
		}
		if (len(res.Changes) == 0) != equalTaints(c.Spec.Taints, res.Taints) {
			t.Errorf("Changes %v, but the taints went from %v to %v", res.Changes, c.Spec.Taints, res.Taints)
		}
	})
}

func equalTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchTaint(&b[i]) || a[i].Value != b[i].Value || !a[i].TimeAdded.Equal(b[i].TimeAdded) {
			return false
		}
	}
	return true
}
