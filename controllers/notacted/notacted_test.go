package notacted_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

// warnings returns the notes of the FieldsNotActedOn events about obj, each Warning, one
// per occurrence (series counted).
func warnings(ctx context.Context, g Gomega, obj client.Object) []string {
	var out []string
	for _, e := range env.Events(ctx, g, obj) {
		if e.Reason != wellknown.EventReasonFieldsNotActedOn {
			continue
		}
		g.Expect(e.Type).To(Equal("Warning"))
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		for range n {
			out = append(out, e.Note)
		}
	}
	return out
}

func selectDeployment(name string) []policyv1alpha1.ResourceSelector {
	return []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}}
}

var _ = Describe("Fields accepted but not acted on", func() {
	It("warns once per generation of a Cluster that sets them, naming each field, and never about an object that does not", func(ctx SpecContext) {
		quiet := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "notacted-quiet"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}}
		Expect(env.Host.Create(ctx, quiet)).To(Succeed())
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "notacted-proxied"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1",
				ProxyURL: "http://127.0.0.1:3128", ProxyHeader: map[string]string{"X-Tenant": "a"}}}
		Expect(env.Host.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) []string { return warnings(ctx, g, c) }).WithContext(ctx).
			Should(ConsistOf(And(ContainSubstring("spec.proxyHeader (ignored"), ContainSubstring("does not act on"))))

		By("a change of something else is a new generation: one more warning")
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Region = "eu"
		Expect(env.Host.Patch(ctx, c, patch)).To(Succeed())
		Eventually(func(g Gomega) []string { return warnings(ctx, g, c) }).WithContext(ctx).Should(HaveLen(2))

		By("a label edit is not a new generation, and an object without such fields gets no warning")
		patch = client.MergeFrom(c.DeepCopy())
		c.Labels = map[string]string{"team": "a"}
		Expect(env.Host.Patch(ctx, c, patch)).To(Succeed())
		Consistently(func(g Gomega) []string { return warnings(ctx, g, c) }).WithContext(ctx).Should(HaveLen(2))
		Expect(warnings(ctx, Default, quiet)).To(BeEmpty())

		By("once the field is gone, nothing more")
		patch = client.MergeFrom(c.DeepCopy())
		c.Spec.ProxyHeader = nil
		Expect(env.Host.Patch(ctx, c, patch)).To(Succeed())
		Consistently(func(g Gomega) []string { return warnings(ctx, g, c) }).WithContext(ctx).Should(HaveLen(2))
	})

	It("does not warn about workload affinity or overflow affinities: the scheduler acts on them", func(ctx SpecContext) {
		ns := "notacted-pp"
		env.CreateNamespace(ctx, ns, nil)
		pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "affine"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectDeployment("b"),
				Placement: policyv1alpha1.Placement{WorkloadAffinity: &policyv1alpha1.WorkloadAffinity{
					AntiAffinity: &policyv1alpha1.WorkloadAffinityTerm{GroupByLabelKey: "app"}}}}}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		cpp := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "notacted-overflow"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectDeployment("c"),
				Placement: policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{{
					AffinityName:       "primary",
					ClusterAffinity:    policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}},
					OverflowAffinities: []policyv1alpha1.OverflowAffinityTerm{{AffinityName: "spill", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}}},
				}}, ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}}}}
		Expect(env.Host.Create(ctx, cpp)).To(Succeed())
		// The Cluster of the spec above shows the warner runs; these two stay quiet.
		Consistently(func(g Gomega) []string { return append(warnings(ctx, g, pp), warnings(ctx, g, cpp)...) }, "3s").WithContext(ctx).Should(BeEmpty())
	})
})
