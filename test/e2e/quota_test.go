package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// A FederatedResourceQuota on full members: its static assignments become ResourceQuotas in
// member1 and member2 whose usage comes back in its status, and its overall limit refuses a
// placement that would exceed it, saying by how much.
var _ = Describe("FederatedResourceQuota: member quotas and an over-quota placement refused", Ordered, func() {
	const ns, name = "quota-e2e", "team"
	frq := func(ctx context.Context, g Gomega) *policyv1alpha1.FederatedResourceQuota {
		q := &policyv1alpha1.FederatedResourceQuota{}
		g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, q)).To(Succeed())
		return q
	}
	propagate := func(ctx context.Context, dep string, replicas int32, cpu string) {
		GinkgoHelper()
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted},
				},
			},
		})).To(Succeed())
		Expect(env.Host.Create(ctx, deployment(ns, dep, replicas, resourceQuantity(cpu), nil))).To(Succeed())
	}

	BeforeAll(func(ctx context.Context) {
		templateNamespace(ctx, ns)
		Expect(env.Host.Create(ctx, &policyv1alpha1.FederatedResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.FederatedResourceQuotaSpec{
				Overall: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("1")},
				StaticAssignments: []policyv1alpha1.StaticClusterAssignment{
					{ClusterName: "member1", Hard: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("2")}},
					{ClusterName: "member2", Hard: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("3")}},
				},
			},
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			for _, d := range []string{"fits", "too-big"} {
				_ = env.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d}})
				_ = env.Host.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d}})
			}
			_ = env.Host.Delete(ctx, &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	})

	It("1. creates a ResourceQuota in each assigned member and aggregates their status", func(ctx context.Context) {
		for m, cpu := range map[string]string{"member1": "2", "member2": "3"} {
			Eventually(func(g Gomega) {
				rq := &corev1.ResourceQuota{}
				g.Expect(env.Members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rq)).To(Succeed())
				g.Expect(rq.Spec.Hard.Cpu().String()).To(Equal(cpu))
			}).WithContext(ctx).Should(Succeed(), m)
		}
		rq := &corev1.ResourceQuota{}
		Expect(apierrors.IsNotFound(env.Members["member3"].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rq))).To(BeTrue())
		Eventually(func(g Gomega) {
			q := frq(ctx, g)
			g.Expect(meta.IsStatusConditionTrue(q.Status.Conditions, policyv1alpha1.FederatedResourceQuotaConditionReady)).To(BeTrue(), "%v", q.Status.Conditions)
			g.Expect(q.Status.AggregatedStatus).To(HaveLen(2))
			g.Expect(q.Status.Overall.Cpu().String()).To(Equal("1"))
		}).WithContext(ctx).Should(Succeed())
	})

	It("2. places what fits, and counts its pods' requests in the members' usage", func(ctx context.Context) {
		propagate(ctx, "fits", 2, "200m")
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "fits-deployment"}, rb)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			used := frq(ctx, g).Status.OverallUsed
			g.Expect(used.Cpu().MilliValue()).To(BeEquivalentTo(400), "overallUsed %v", used)
		}).WithContext(ctx).Should(Succeed())
	})

	It("3. refuses a placement that would exceed overall, saying by how much", func(ctx context.Context) {
		propagate(ctx, "too-big", 3, "300m")
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "too-big-deployment"}, rb)).To(Succeed())
			c := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("would exceed the overall limit of FederatedResourceQuota team: cpu over by 300m (1300m requested, limit 1)"))
			g.Expect(rb.Spec.Clusters).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})

	It("4. removes the member quotas with the FederatedResourceQuota", func(ctx context.Context) {
		Expect(env.Host.Delete(ctx, &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		for _, m := range []string{"member1", "member2"} {
			Eventually(func() bool {
				return apierrors.IsNotFound(env.Members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.ResourceQuota{}))
			}).WithContext(ctx).Should(BeTrue(), m)
		}
	})
})
