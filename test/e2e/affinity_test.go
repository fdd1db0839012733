package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// deployment is a Deployment of replicas Pods, each requesting cpu, with the labels.
func deployment(ns, name string, replicas int32, cpu resource.Quantity, labels map[string]string) *appsv1.Deployment {
	sel := map[string]string{"app": name}
	tmplLabels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: tmplLabels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}}}}},
			},
		},
	}
}

// freeCPU is the CPU a member's Cluster reports free: allocatable - allocated - allocating.
func freeCPU(ctx context.Context, g Gomega, member string) int64 {
	c := &clusterv1alpha1.Cluster{}
	g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: member}, c)).To(Succeed())
	rs := c.Status.ResourceSummary
	g.Expect(rs).NotTo(BeNil(), "%s reports no resource summary yet", member)
	a, u, p := rs.Allocatable[corev1.ResourceCPU], rs.Allocated[corev1.ResourceCPU], rs.Allocating[corev1.ResourceCPU]
	return a.MilliValue() - u.MilliValue() - p.MilliValue()
}

// On full members (kube-scheduler, kwok Nodes that run the Pods): the preferred group is
// member1, the overflow group member2. Each replica requests 2/5 of member1's free CPU, so
// member1 holds two and a third overflows.
var _ = Describe("Overflow affinities: fill the preferred group, overflow, shrink back", Ordered, func() {
	const ns, name = "overflow-e2e", "burst"
	var cpu resource.Quantity
	placed := func(ctx context.Context) map[string]framework.Replicas {
		out := map[string]framework.Replicas{}
		for m, r := range env.DeploymentReplicas(ctx, ns, name) {
			if r.Spec >= 0 {
				out[m] = r
			}
		}
		return out
	}
	scaleTo := func(ctx context.Context, n int32) {
		GinkgoHelper()
		d := &appsv1.Deployment{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To(n)
		Expect(env.Host.Patch(ctx, d, patch)).To(Succeed())
	}

	BeforeAll(func(ctx context.Context) {
		var free int64
		Eventually(func(g Gomega) { free = freeCPU(ctx, g, "member1") }).WithContext(ctx).Should(Succeed())
		cpu = *resource.NewMilliQuantity(free*2/5, resource.DecimalSI)
		templateNamespace(ctx, ns)
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{{
						AffinityName:    "on-prem",
						ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}},
						OverflowAffinities: []policyv1alpha1.OverflowAffinityTerm{{AffinityName: "public-cloud",
							ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}}},
					}},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
						WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
					},
				},
			},
		})).To(Succeed())
		Expect(env.Host.Create(ctx, deployment(ns, name, 2, cpu, nil))).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	})

	It("1. puts what the preferred group holds in it", func(ctx context.Context) {
		Eventually(func() map[string]framework.Replicas { return placed(ctx) }).WithContext(ctx).
			Should(Equal(map[string]framework.Replicas{"member1": {Spec: 2, Ready: 2}}))
	})

	It("2. overflows a scale-up the preferred group cannot hold to the next group", func(ctx context.Context) {
		// member1's Cluster reports its two Pods' CPU as taken before the scale-up, as it
		// would long after they started.
		Eventually(func(g Gomega) int64 { return freeCPU(ctx, g, "member1") }).WithContext(ctx).Should(BeNumerically("<", cpu.MilliValue()))
		scaleTo(ctx, 3)
		Eventually(func() map[string]framework.Replicas { return placed(ctx) }).WithContext(ctx).
			Should(Equal(map[string]framework.Replicas{"member1": {Spec: 2, Ready: 2}, "member2": {Spec: 1, Ready: 1}}))
		rb := &workv1alpha2.ResourceBinding{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-deployment"}, rb)).To(Succeed())
		Expect(rb.Status.SchedulerObservedAffinityName).To(Equal("on-prem"))
	})

	It("3. shrinks the overflow group first on a scale-down", func(ctx context.Context) {
		scaleTo(ctx, 2)
		Eventually(func() map[string]framework.Replicas { return placed(ctx) }).WithContext(ctx).
			Should(Equal(map[string]framework.Replicas{"member1": {Spec: 2, Ready: 2}}))
	})
})

// Two pipelines of one HA pair (label ha.pair=orders) never share a member.
var _ = Describe("Workload anti-affinity: two workloads of a group on two members", Ordered, func() {
	const ns = "antiaffinity-e2e"

	BeforeAll(func(ctx context.Context) {
		templateNamespace(ctx, ns)
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pipelines"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2", "member3"}},
					SpreadConstraints: []policyv1alpha1.SpreadConstraint{
						{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 1, MinGroups: 1}},
					WorkloadAffinity: &policyv1alpha1.WorkloadAffinity{
						AntiAffinity: &policyv1alpha1.WorkloadAffinityTerm{GroupByLabelKey: "ha.pair"}},
				},
			},
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			for _, n := range []string{"orders-a", "orders-b"} {
				_ = env.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}})
			}
			_ = env.Host.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pipelines"}})
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	})

	It("places the second workload of the pair away from the first", func(ctx context.Context) {
		pair := map[string]string{"ha.pair": "orders"}
		members := map[string]string{}
		for _, n := range []string{"orders-a", "orders-b"} {
			Expect(env.Host.Create(ctx, deployment(ns, n, 1, resource.MustParse("100m"), pair))).To(Succeed())
			Eventually(func(g Gomega) {
				rb := &workv1alpha2.ResourceBinding{}
				g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: n + "-deployment"}, rb)).To(Succeed())
				g.Expect(rb.Spec.WorkloadAffinityGroups).To(Equal(&workv1alpha2.WorkloadAffinityGroups{AntiAffinityGroup: "ha.pair=orders"}))
				g.Expect(rb.Spec.Clusters).To(HaveLen(1))
				members[n] = rb.Spec.Clusters[0].Name
				g.Expect(env.DeploymentReplicas(ctx, ns, n)).To(HaveKeyWithValue(members[n], framework.Replicas{Spec: 1, Ready: 1}))
			}).WithContext(ctx).Should(Succeed())
		}
		Expect(members["orders-a"]).NotTo(Equal(members["orders-b"]))
		for _, n := range []string{"orders-a", "orders-b"} {
			for m, r := range env.DeploymentReplicas(ctx, ns, n) {
				if m != members[n] {
					Expect(r.Spec).To(BeEquivalentTo(-1), "%s runs only on %s, not on %s", n, members[n], m)
				}
			}
		}
	})
})
