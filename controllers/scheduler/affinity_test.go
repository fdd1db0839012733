package scheduler_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// setPods reports the cluster's pod slots, allocatable and allocated, as the cluster
// controller's collection would.
func setPods(ctx context.Context, name string, allocatable, allocated int64) {
	GinkgoHelper()
	cl := &clusterv1alpha1.Cluster{}
	Expect(c.Get(ctx, types.NamespacedName{Name: name}, cl)).To(Succeed())
	cl.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(allocatable, resource.DecimalSI)},
		Allocated:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(allocated, resource.DecimalSI)},
	}
	Expect(c.Status().Update(ctx, cl)).To(Succeed())
}

// scale sets a binding's replicas, retrying when the scheduler wrote it meanwhile.
func scale(ctx context.Context, ns, name string, replicas int32) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rb := get(ctx, ns, name)
		rb.Spec.Replicas = replicas
		return c.Update(ctx, rb)
	})).To(Succeed())
}

// oneCluster places one replica on one of m1, m2, m3.
func oneCluster() *policyv1alpha1.Placement {
	return &policyv1alpha1.Placement{
		ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1", "m2", "m3"}},
		SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 1, MinGroups: 1}},
	}
}

func grouped(ns, name string, groups workv1alpha2.WorkloadAffinityGroups) *workv1alpha2.ResourceBinding {
	rb := newBinding(ns, name, 1, oneCluster())
	rb.Spec.WorkloadAffinityGroups = &groups
	return rb
}

func clusterOf(ctx context.Context, g Gomega, ns, name string) string {
	rb := &workv1alpha2.ResourceBinding{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rb)).To(Succeed())
	g.Expect(rb.Spec.Clusters).To(HaveLen(1), name)
	return rb.Spec.Clusters[0].Name
}

var _ = Describe("Overflow affinities", func() {
	It("fills the preferred group, overflows to the next when it is full, and shrinks back in reverse", func(ctx context.Context) {
		for _, n := range []string{"idc-a", "cloud-a"} {
			Expect(createCluster(ctx, c, n, nil)).To(Succeed())
		}
		setPods(ctx, "idc-a", 2, 0)
		setPods(ctx, "cloud-a", 10, 0)
		ns := newNamespace(ctx)
		p := &policyv1alpha1.Placement{
			ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{{
				AffinityName:    "on-prem",
				ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"idc-a"}},
				OverflowAffinities: []policyv1alpha1.OverflowAffinityTerm{{AffinityName: "public-cloud",
					ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"cloud-a"}}}},
			}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}},
		}
		Expect(c.Create(ctx, newBinding(ns, "burst", 2, p))).To(Succeed())
		Eventually(func(g Gomega) {
			rb := get(ctx, ns, "burst")
			g.Expect(replicasOf(rb)).To(Equal(map[string]int32{"idc-a": 2}))
			g.Expect(rb.Status.SchedulerObservedAffinityName).To(Equal("on-prem"))
		}).WithContext(ctx).Should(Succeed())

		By("the preferred group's pods run: it is full, and a scale-up overflows")
		setPods(ctx, "idc-a", 2, 2)
		scale(ctx, ns, "burst", 5)
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "burst")) }).WithContext(ctx).
			Should(Equal(map[string]int32{"idc-a": 2, "cloud-a": 3}))
		Consistently(func() map[string]int32 { return replicasOf(get(ctx, ns, "burst")) }, 2*time.Second).WithContext(ctx).
			Should(Equal(map[string]int32{"idc-a": 2, "cloud-a": 3}), "the overflow clusters are not taken for clusters that left the affinity")

		By("a scale-down leaves the overflow group first")
		scale(ctx, ns, "burst", 3)
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "burst")) }).WithContext(ctx).
			Should(Equal(map[string]int32{"idc-a": 2, "cloud-a": 1}))
		scale(ctx, ns, "burst", 1)
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "burst")) }).WithContext(ctx).
			Should(Equal(map[string]int32{"idc-a": 1}))
	})

	It("refuses overflow with a division that does not look at capacity, naming the field", func(ctx context.Context) {
		ns := newNamespace(ctx)
		p := &policyv1alpha1.Placement{
			ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{{
				AffinityName:    "on-prem",
				ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}},
				OverflowAffinities: []policyv1alpha1.OverflowAffinityTerm{{AffinityName: "cloud",
					ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}}}},
			}},
		}
		// The schema refuses it (the scheduler would too: internal/scheduler's tests).
		err := c.Create(ctx, newBinding(ns, "dup", 2, p))
		Expect(err).To(MatchError(And(ContainSubstring("spec.placement.clusterAffinities"), ContainSubstring("overflowAffinities: only with replicaScheduling Divided"))))
	})
})

var _ = Describe("Workload affinity", func() {
	It("keeps workloads of an anti-affinity group apart, and places a waiting one when a peer leaves", func(ctx context.Context) {
		ns, other := newNamespace(ctx), newNamespace(ctx)
		apart := workv1alpha2.WorkloadAffinityGroups{AntiAffinityGroup: "app=pipeline"}
		seen := map[string]string{}
		for _, name := range []string{"p1", "p2", "p3"} {
			Expect(c.Create(ctx, grouped(ns, name, apart))).To(Succeed())
			Eventually(func(g Gomega) { seen[name] = clusterOf(ctx, g, ns, name) }).WithContext(ctx).Should(Succeed())
		}
		Expect(seen).To(HaveLen(3))
		Expect([]string{seen["p1"], seen["p2"], seen["p3"]}).To(ConsistOf("m1", "m2", "m3"))

		By("a fourth finds every cluster taken by its group, and says so")
		Expect(c.Create(ctx, grouped(ns, "p4", apart))).To(Succeed())
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(get(ctx, ns, "p4").Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(wellknown.ReasonBindingUnschedulable))
			g.Expect(cond.Message).To(ContainSubstring("3 held a workload of the same anti-affinity group"))
		}).WithContext(ctx).Should(Succeed())

		By("the same group in another namespace is another group")
		Expect(c.Create(ctx, grouped(other, "p1", apart))).To(Succeed())
		Eventually(func(g Gomega) { clusterOf(ctx, g, other, "p1") }).WithContext(ctx).Should(Succeed())

		By("a peer goes: the waiting one takes its cluster at once, not after its backoff")
		// Past its first retry (5 s after the failure), the next is 10 s later: a placement
		// within 4 s of the deletion comes from the peer's event.
		time.Sleep(6 * time.Second)
		Expect(c.Delete(ctx, get(ctx, ns, "p2"))).To(Succeed())
		Eventually(func(g Gomega) string { return clusterOf(ctx, g, ns, "p4") }).WithContext(ctx).WithTimeout(4 * time.Second).
			Should(Equal(seen["p2"]))
	})

	It("puts the workloads of an affinity group with the first one placed", func(ctx context.Context) {
		ns := newNamespace(ctx)
		together := workv1alpha2.WorkloadAffinityGroups{AffinityGroup: "app=training"}
		Expect(c.Create(ctx, grouped(ns, "shard-0", together))).To(Succeed())
		var first string
		Eventually(func(g Gomega) { first = clusterOf(ctx, g, ns, "shard-0") }).WithContext(ctx).Should(Succeed())
		for _, name := range []string{"shard-1", "shard-2", "shard-3"} {
			Expect(c.Create(ctx, grouped(ns, name, together))).To(Succeed())
		}
		for _, name := range []string{"shard-1", "shard-2", "shard-3"} {
			Eventually(func(g Gomega) string { return clusterOf(ctx, g, ns, name) }).WithContext(ctx).Should(Equal(first), name)
		}
	})
})
