package clustertaint_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/clustertaint"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

const (
	failedKey  = "example.com/failed"
	witnessKey = "example.com/witness"
	// systemKey stands for the taints the cluster controller keeps.
	systemKey = "cluster.karmada.io/not-ready"
)

// newCluster creates a Push Cluster that points nowhere (no cluster controller runs), with
// labels and taints, and deletes it at the end of the spec.
func newCluster(ctx context.Context, name string, labels map[string]string, taints ...corev1.Taint) *clusterv1alpha1.Cluster {
	GinkgoHelper()
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1", Taints: taints},
	}
	Expect(env.Host.Create(ctx, c)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(env.Host.Delete(ctx, c))).To(Succeed())
	})
	return c
}

// setCondition sets one condition of a Cluster's status, as the cluster controller would.
func setCondition(ctx context.Context, name, condType string, status metav1.ConditionStatus) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &clusterv1alpha1.Cluster{}
		if err := env.Host.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			return err
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: condType, Status: status, Reason: "Test", Message: "set by the test"})
		return env.Host.Status().Update(ctx, c)
	})).To(Succeed())
}

// setLabels replaces a Cluster's labels.
func setLabels(ctx context.Context, name string, labels map[string]string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &clusterv1alpha1.Cluster{}
		if err := env.Host.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			return err
		}
		c.Labels = labels
		return env.Host.Update(ctx, c)
	})).To(Succeed())
}

func cond(t string, op policyv1alpha1.MatchConditionOperator, values ...metav1.ConditionStatus) policyv1alpha1.MatchCondition {
	return policyv1alpha1.MatchCondition{ConditionType: t, Operator: op, StatusValues: values}
}

func names(ns ...string) *policyv1alpha1.ClusterAffinity {
	return &policyv1alpha1.ClusterAffinity{ClusterNames: ns}
}

// newPolicy creates a ClusterTaintPolicy and deletes it at the end of the spec.
func newPolicy(ctx context.Context, name string, target *policyv1alpha1.ClusterAffinity, add, remove []policyv1alpha1.MatchCondition, taints ...policyv1alpha1.Taint) *policyv1alpha1.ClusterTaintPolicy {
	GinkgoHelper()
	p := &policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			TargetClusters: target, AddOnConditions: add, RemoveOnConditions: remove, Taints: taints,
		},
	}
	Expect(env.Host.Create(ctx, p)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(env.Host.Delete(ctx, p))).To(Succeed())
	})
	return p
}

// witness creates a policy that adds witness:NoSchedule to the named cluster while condType
// is status. Once the witness taint shows, the controller has evaluated the cluster with
// every policy change made before the witness was created, and with that condition: what
// the other policies did not do by then they will not do.
func witness(ctx context.Context, policy, cluster, condType string, status metav1.ConditionStatus) {
	GinkgoHelper()
	newPolicy(ctx, policy, names(cluster), []policyv1alpha1.MatchCondition{cond(condType, policyv1alpha1.MatchConditionOpIn, status)}, nil,
		policyv1alpha1.Taint{Key: witnessKey, Effect: corev1.TaintEffectNoSchedule})
	Eventually(func(g Gomega) {
		g.Expect(taintKeys(ctx, g, cluster)).To(ContainElement(witnessKey + ":NoSchedule"))
	}).WithContext(ctx).Should(Succeed())
}

func taintsOf(ctx context.Context, g Gomega, name string) []corev1.Taint {
	c := &clusterv1alpha1.Cluster{}
	g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
	return c.Spec.Taints
}

// taintKeys are the cluster's taints as key:effect, in order.
func taintKeys(ctx context.Context, g Gomega, name string) []string {
	var out []string
	for _, t := range taintsOf(ctx, g, name) {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

func eventNotes(ctx context.Context, g Gomega, obj client.Object) []string {
	var out []string
	for _, ev := range env.Events(ctx, g, obj) {
		out = append(out, ev.Reason+": "+ev.Note)
	}
	return out
}

var (
	in    = policyv1alpha1.MatchConditionOpIn
	notIn = policyv1alpha1.MatchConditionOpNotIn
	T     = metav1.ConditionTrue
	F     = metav1.ConditionFalse

	failedNoExecute = policyv1alpha1.Taint{Key: failedKey, Effect: corev1.TaintEffectNoExecute}
	systemTaint     = corev1.Taint{Key: systemKey, Effect: corev1.TaintEffectNoSchedule}
)

var _ = Describe("ClusterTaintPolicy", func() {
	It("adds NoExecute while Ready is False and removes it when Ready is True, leaving other taints alone", func(ctx SpecContext) {
		c := newCluster(ctx, "ready-flip", nil, systemTaint)
		p := newPolicy(ctx, "ready-flip", names(c.Name),
			[]policyv1alpha1.MatchCondition{cond("Ready", in, F)}, []policyv1alpha1.MatchCondition{cond("Ready", in, T)}, failedNoExecute)

		setCondition(ctx, c.Name, "Ready", F)
		Eventually(func(g Gomega) {
			taints := taintsOf(ctx, g, c.Name)
			g.Expect(taints).To(HaveLen(2))
			g.Expect(taints[0]).To(Equal(systemTaint), "the taint no policy names stays first and unchanged")
			g.Expect(taints[1].Key).To(Equal(failedKey))
			g.Expect(taints[1].Effect).To(Equal(corev1.TaintEffectNoExecute))
			g.Expect(taints[1].TimeAdded).NotTo(BeNil(), "a new taint is dated")
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventNotes(ctx, g, c)).To(ContainElement(
				"ClusterTaintAdded: ClusterTaintPolicy ready-flip added taint example.com/failed:NoExecute because Ready is False"))
			g.Expect(eventNotes(ctx, g, p)).To(ContainElement(
				"ClusterTaintAdded: Added taint example.com/failed:NoExecute to Cluster ready-flip because Ready is False"))
		}).WithContext(ctx).Should(Succeed())

		setCondition(ctx, c.Name, "Ready", T)
		Eventually(func(g Gomega) {
			g.Expect(taintsOf(ctx, g, c.Name)).To(Equal([]corev1.Taint{systemTaint}))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventNotes(ctx, g, c)).To(ContainElement(
				"ClusterTaintRemoved: ClusterTaintPolicy ready-flip removed taint example.com/failed:NoExecute because Ready is True"))
			g.Expect(eventNotes(ctx, g, p)).To(ContainElement(
				"ClusterTaintRemoved: Removed taint example.com/failed:NoExecute from Cluster ready-flip because Ready is True"))
		}).WithContext(ctx).Should(Succeed())
	})

	It("taints only the clusters targetClusters selects by label, and a cluster that leaves them keeps its taints", func(ctx SpecContext) {
		gold := newCluster(ctx, "label-gold", map[string]string{"tier": "gold"})
		silver := newCluster(ctx, "label-silver", map[string]string{"tier": "silver"})
		setCondition(ctx, gold.Name, "Ready", F)
		setCondition(ctx, silver.Name, "Ready", F)
		newPolicy(ctx, "label-gold", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}},
			[]policyv1alpha1.MatchCondition{cond("Ready", in, F)}, []policyv1alpha1.MatchCondition{cond("Ready", in, T)}, failedNoExecute)

		Eventually(func(g Gomega) {
			g.Expect(taintKeys(ctx, g, gold.Name)).To(Equal([]string{failedKey + ":NoExecute"}))
		}).WithContext(ctx).Should(Succeed())
		witness(ctx, "label-witness-silver", silver.Name, "Ready", F)
		Expect(taintKeys(ctx, Default, silver.Name)).To(Equal([]string{witnessKey + ":NoSchedule"}), "silver is not targeted")

		By("labelling silver gold: it is tainted")
		setLabels(ctx, silver.Name, map[string]string{"tier": "gold"})
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(ctx, g, silver.Name)).To(ConsistOf(witnessKey+":NoSchedule", failedKey+":NoExecute"))
		}).WithContext(ctx).Should(Succeed())

		By("labelling it silver again and making it Ready: it is no longer targeted, so it keeps the taint")
		setLabels(ctx, silver.Name, map[string]string{"tier": "silver"})
		setCondition(ctx, silver.Name, "Ready", T)
		witness2 := "label-witness-ready"
		newPolicy(ctx, witness2, names(silver.Name), []policyv1alpha1.MatchCondition{cond("Ready", in, T)}, nil,
			policyv1alpha1.Taint{Key: "example.com/ready-seen", Effect: corev1.TaintEffectNoSchedule})
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(ctx, g, silver.Name)).To(ContainElement("example.com/ready-seen:NoSchedule"))
		}).WithContext(ctx).Should(Succeed())
		Expect(taintKeys(ctx, Default, silver.Name)).To(ContainElement(failedKey+":NoExecute"), "a cluster that left targetClusters keeps its taints")
	})

	It("keeps the taints when the policy is deleted", func(ctx SpecContext) {
		c := newCluster(ctx, "deleted-policy", nil)
		setCondition(ctx, c.Name, "Ready", F)
		p := newPolicy(ctx, "deleted-policy", names(c.Name),
			[]policyv1alpha1.MatchCondition{cond("Ready", in, F)}, []policyv1alpha1.MatchCondition{cond("Ready", in, T)}, failedNoExecute)
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(ctx, g, c.Name)).To(Equal([]string{failedKey + ":NoExecute"}))
		}).WithContext(ctx).Should(Succeed())

		Expect(env.Host.Delete(ctx, p)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Host.Get(ctx, client.ObjectKeyFromObject(p), &policyv1alpha1.ClusterTaintPolicy{}))
		}).WithContext(ctx).Should(BeTrue())
		// Ready=True would make the deleted policy remove its taint.
		setCondition(ctx, c.Name, "Ready", T)
		witness(ctx, "deleted-policy-witness", c.Name, "Ready", T)
		Expect(taintKeys(ctx, Default, c.Name)).To(Equal([]string{failedKey + ":NoExecute", witnessKey + ":NoSchedule"}))
	})

	It("applies two policies to the same cluster, each adding and removing its own taints", func(ctx SpecContext) {
		c := newCluster(ctx, "two-policies", nil)
		// b is created first: taints are added in policy name order, not creation order.
		newPolicy(ctx, "two-policies-b", names(c.Name),
			[]policyv1alpha1.MatchCondition{cond("Ready", notIn, T)}, nil,
			policyv1alpha1.Taint{Key: "example.com/b", Value: "down", Effect: corev1.TaintEffectNoSchedule})
		newPolicy(ctx, "two-policies-a", names(c.Name),
			[]policyv1alpha1.MatchCondition{cond("Ready", in, F), cond("NetworkUnavailable", in, T)},
			[]policyv1alpha1.MatchCondition{cond("Ready", in, T)},
			policyv1alpha1.Taint{Key: "example.com/a", Effect: corev1.TaintEffectNoExecute})

		// One status write, so that both policies first see the cluster with both conditions.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &clusterv1alpha1.Cluster{}
			if err := env.Host.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
				return err
			}
			meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: "Ready", Status: F, Reason: "Test"})
			meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: "NetworkUnavailable", Status: T, Reason: "Test"})
			return env.Host.Status().Update(ctx, cur)
		})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(ctx, g, c.Name)).To(Equal([]string{"example.com/a:NoExecute", "example.com/b:NoSchedule"}))
		}).WithContext(ctx).Should(Succeed())
		Expect(taintsOf(ctx, Default, c.Name)[1].Value).To(Equal("down"))

		By("Ready=True: a removes its taint, b (no removeOnConditions) keeps its own")
		setCondition(ctx, c.Name, "Ready", T)
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(ctx, g, c.Name)).To(Equal([]string{"example.com/b:NoSchedule"}))
		}).WithContext(ctx).Should(Succeed())
	})

	It("never overwrites a taint another writer added meanwhile: its patch fails and the next reconcile keeps both", func(ctx SpecContext) {
		c := newCluster(ctx, "concurrent", nil)
		setCondition(ctx, c.Name, "Ready", F)
		// A reconcile that read the Cluster before the cluster controller added its taint.
		stale := &clusterv1alpha1.Cluster{}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(c), stale)).To(Succeed())

		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &clusterv1alpha1.Cluster{}
			if err := env.Host.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
				return err
			}
			cur.Spec.Taints = append(cur.Spec.Taints, systemTaint)
			return env.Host.Update(ctx, cur)
		})).To(Succeed())
		newPolicy(ctx, "concurrent", names(c.Name), []policyv1alpha1.MatchCondition{cond("Ready", in, F)}, nil, failedNoExecute)

		r := &clustertaint.Reconciler{Client: staleReader{Client: env.Host, stale: stale}, Recorder: mgr.GetEventRecorder("test"), Clock: clock.RealClock{}}
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "want a conflict, got %v", err)

		Eventually(func(g Gomega) {
			g.Expect(taintKeys(ctx, g, c.Name)).To(Equal([]string{systemKey + ":NoSchedule", failedKey + ":NoExecute"}))
		}).WithContext(ctx).Should(Succeed())
	})

	It("warns on a policy whose targetClusters cannot be evaluated and still applies the others", func(ctx SpecContext) {
		c := newCluster(ctx, "invalid-target", nil)
		setCondition(ctx, c.Name, "Ready", F)
		bad := newPolicy(ctx, "invalid-target-bad", &policyv1alpha1.ClusterAffinity{
			ClusterNames:  []string{c.Name},
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}},
		}, []policyv1alpha1.MatchCondition{cond("Ready", in, F)}, nil, policyv1alpha1.Taint{Key: "example.com/bad", Effect: corev1.TaintEffectNoSchedule})
		newPolicy(ctx, "invalid-target-good", names(c.Name), []policyv1alpha1.MatchCondition{cond("Ready", in, F)}, nil, failedNoExecute)
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(ctx, g, c.Name)).To(Equal([]string{failedKey + ":NoExecute"}))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			var warnings []string
			for _, ev := range env.Events(ctx, g, bad) {
				if ev.Type == corev1.EventTypeWarning {
					warnings = append(warnings, ev.Reason+": "+ev.Note)
				}
			}
			g.Expect(warnings).To(ContainElement(And(
				HavePrefix("InvalidTargetClusters: The policy is skipped until fixed: targetClusters: labelSelector:"),
				ContainSubstring(`"Near" is not a valid label selector operator`))))
		}).WithContext(ctx).Should(Succeed())
	})
})

var _ = Describe("ClusterTaintPolicy admission", func() {
	valid := func() *policyv1alpha1.ClusterTaintPolicy {
		return &policyv1alpha1.ClusterTaintPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "admission"},
			Spec: policyv1alpha1.ClusterTaintPolicySpec{
				AddOnConditions:    []policyv1alpha1.MatchCondition{cond("Ready", in, F)},
				RemoveOnConditions: []policyv1alpha1.MatchCondition{cond("Ready", in, T)},
				Taints:             []policyv1alpha1.Taint{failedNoExecute},
			},
		}
	}
	It("admits a valid policy (server-side dry run)", func(ctx SpecContext) {
		Expect(env.Host.Create(ctx, valid(), client.DryRunAll)).To(Succeed())
	})
	It("admits the sample in config/samples and reads it back unchanged", func(ctx SpecContext) {
		data, err := os.ReadFile(filepath.Join(fleettest.RepoRoot(), "config", "samples", "policy_v1alpha1_clustertaintpolicy.yaml"))
		Expect(err).NotTo(HaveOccurred())
		sample := &policyv1alpha1.ClusterTaintPolicy{}
		Expect(yaml.UnmarshalStrict(data, sample)).To(Succeed())
		created := sample.DeepCopy()
		Expect(env.Host.Create(ctx, created, client.DryRunAll)).To(Succeed())
		Expect(created.Spec).To(Equal(sample.Spec))
	})
	cases := []struct {
		name   string
		mutate func(p *policyv1alpha1.ClusterTaintPolicy)
		want   []string
	}{
		{"no taints", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.Taints = []policyv1alpha1.Taint{} },
			[]string{"spec.taints: Invalid value", "taints: list at least one taint (key and effect) for the policy to add or remove"}},
		{"the same key and effect twice", func(p *policyv1alpha1.ClusterTaintPolicy) {
			p.Spec.Taints = append(p.Spec.Taints, policyv1alpha1.Taint{Key: failedKey, Value: "other", Effect: corev1.TaintEffectNoExecute})
		}, []string{"spec.taints", "taints: each key and effect pair may appear only once; merge the duplicate entries"}},
		{"an effect Kubernetes does not know", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.Taints[0].Effect = "NoExec" },
			[]string{"spec.taints[0].effect", `Unsupported value: "NoExec"`, `"NoSchedule", "PreferNoSchedule", "NoExecute"`}},
		{"a key that is not a qualified name", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.Taints[0].Key = "bad key!" },
			[]string{"spec.taints[0].key", "key must be a qualified name such as failed or example.com/failed"}},
		{"a taint without a key", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.Taints[0].Key = "" },
			[]string{"spec.taints[0].key"}},
		{"empty statusValues", func(p *policyv1alpha1.ClusterTaintPolicy) {
			p.Spec.AddOnConditions[0].StatusValues = []metav1.ConditionStatus{}
		},
			[]string{"spec.addOnConditions[0].statusValues", "statusValues: list at least one of True, False, Unknown"}},
		{"a status that is not True, False or Unknown", func(p *policyv1alpha1.ClusterTaintPolicy) {
			p.Spec.RemoveOnConditions[0].StatusValues = []metav1.ConditionStatus{"Yes"}
		}, []string{"spec.removeOnConditions[0].statusValues[0]", `Unsupported value: "Yes"`, `"True", "False", "Unknown"`}},
		{"an operator other than In and NotIn", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.AddOnConditions[0].Operator = "Exists" },
			[]string{"spec.addOnConditions[0].operator", `Unsupported value: "Exists"`, `"In", "NotIn"`}},
		{"a condition without a type", func(p *policyv1alpha1.ClusterTaintPolicy) { p.Spec.AddOnConditions[0].ConditionType = "" },
			[]string{"spec.addOnConditions[0].conditionType"}},
		{"a field selector on an unknown field", func(p *policyv1alpha1.ClusterTaintPolicy) {
			p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "planet", Operator: corev1.NodeSelectorOpIn, Values: []string{"mars"}}}}}
		}, []string{"fieldSelector: matchExpressions[].key must be one of provider, region, zone"}},
	}
	for _, tc := range cases {
		It("rejects "+tc.name+" with a message that says what to fix", func(ctx SpecContext) {
			p := valid()
			tc.mutate(p)
			err := env.Host.Create(ctx, p, client.DryRunAll)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			for _, s := range tc.want {
				Expect(err.Error()).To(ContainSubstring(s))
			}
		})
	}
	It("rejects a policy without spec.taints", func(ctx SpecContext) {
		p := valid()
		p.Spec.Taints = nil
		err := env.Host.Create(ctx, p, client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(strings.Contains(err.Error(), "spec.taints")).To(BeTrue(), err.Error())
	})
})

// staleReader is the host client, except that it reads one Cluster as it was earlier: a
// reconcile working from a cache that has not seen the latest write yet.
type staleReader struct {
	client.Client
	stale *clusterv1alpha1.Cluster
}

func (s staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c, ok := obj.(*clusterv1alpha1.Cluster); ok && key.Name == s.stale.Name {
		s.stale.DeepCopyInto(c)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}
