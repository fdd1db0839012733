package scheduler_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// withCPU is a binding whose replicas each request cpu.
func withCPU(ns, name string, replicas int32, cpu string) *workv1alpha2.ResourceBinding {
	rb := newBinding(ns, name, replicas, weighted("m1", "m2"))
	rb.Spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	return rb
}

func scheduledCondition(ctx context.Context, g Gomega, ns, name string) *metav1.Condition {
	cond := meta.FindStatusCondition(get(ctx, ns, name).Status.Conditions, wellknown.ConditionScheduled)
	g.Expect(cond).NotTo(BeNil())
	return cond
}

var _ = Describe("FederatedResourceQuota overall", func() {
	It("refuses a placement that would exceed it, saying by how much, and places it once the quota is raised", func(ctx context.Context) {
		ns := newNamespace(ctx)
		q := &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
			Spec: policyv1alpha1.FederatedResourceQuotaSpec{Overall: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
		Expect(c.Create(ctx, q)).To(Succeed())

		Expect(c.Create(ctx, withCPU(ns, "a", 2, "500m"))).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(scheduledCondition(ctx, g, ns, "a").Status).To(Equal(metav1.ConditionTrue)) }).WithContext(ctx).Should(Succeed())

		By("the first placement at creation (PlaceNew) honours the quota too")
		early := withCPU(ns, "early", 3, "500m")
		placed, err := placer.PlaceNew(ctx, early)
		Expect(err).NotTo(HaveOccurred())
		Expect(placed).To(BeFalse(), "an over-quota binding is left to the reconcile, which reports why")
		Expect(early.Spec.Clusters).To(BeEmpty())
		fits := withCPU(ns, "fits", 1, "500m")
		Expect(placer.PlaceNew(ctx, fits)).To(BeTrue())

		By("a second binding would bring the namespace to 2500m of 2 CPUs")
		Expect(c.Create(ctx, withCPU(ns, "b", 3, "500m"))).To(Succeed())
		Eventually(func(g Gomega) {
			cond := scheduledCondition(ctx, g, ns, "b")
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(wellknown.ReasonBindingUnschedulable))
			g.Expect(cond.Message).To(ContainSubstring("would exceed the overall limit of FederatedResourceQuota team: cpu over by 500m (2500m requested, limit 2)"))
		}).WithContext(ctx).Should(Succeed())
		Expect(get(ctx, ns, "b").Spec.Clusters).To(BeEmpty())

		By("raising overall places it without waiting for the backoff")
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "team"}, q)).To(Succeed())
		q.Spec.Overall = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
		Expect(c.Update(ctx, q)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(scheduledCondition(ctx, g, ns, "b").Status).To(Equal(metav1.ConditionTrue)) }).WithContext(ctx).Should(Succeed())

		By("a scale-up beyond it is refused and keeps the current placement")
		before := replicasOf(get(ctx, ns, "a"))
		scale(ctx, ns, "a", 4)
		Eventually(func(g Gomega) {
			cond := scheduledCondition(ctx, g, ns, "a")
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Message).To(ContainSubstring("cpu over by 500m (3500m requested, limit 3)"))
		}).WithContext(ctx).Should(Succeed())
		Expect(replicasOf(get(ctx, ns, "a"))).To(Equal(before))
	})
})
