package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// The e2e manager runs the descheduler with a short threshold (e2e_suite_test.go). The
// replicas of this Deployment may not share a node (required pod anti-affinity), which the
// scheduler's estimate does not model: Aggregated puts all four on the member with the most
// free CPU, whose three nodes run three, and the fourth stays Pending there, unschedulable.
// The descheduler moves it to the other member; the three that run are never touched.
var _ = Describe("Descheduler: replicas that wait for room", func() {
	It("moves an unschedulable replica to the member with room, never taking down one that runs", func(ctx context.Context) {
		const ns, name = "desched-e2e", "spread"
		templateNamespace(ctx, ns)
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}}}})).To(Succeed())
		d := deployment(ns, name, 4, resource.MustParse("100m"), nil)
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, TopologyKey: corev1.LabelHostname}}}}
		start := time.Now()
		Expect(env.Host.Create(ctx, d)).To(Succeed())

		// The member that got all four runs three; from then on it never runs fewer.
		var full string
		Eventually(func(g Gomega) {
			for m, r := range env.DeploymentReplicas(ctx, ns, name) {
				if r.Spec == 4 && r.Ready == 3 {
					full = m
				}
			}
			g.Expect(full).NotTo(BeEmpty(), "one member runs three of four")
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) map[string]framework.Replicas {
			got := map[string]framework.Replicas{}
			for m, r := range env.DeploymentReplicas(ctx, ns, name) {
				if m == full && r.Ready < 3 {
					StopTrying("a replica that ran on " + m + " was taken down").Now()
				}
				if r.Spec > 0 {
					got[m] = r
				}
			}
			return got
		}).WithContext(ctx).Should(HaveLen(2))
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, ns, name)
			g.Expect(got[full]).To(Equal(framework.Replicas{Spec: 3, Ready: 3}))
			other := "member1"
			if full == other {
				other = "member2"
			}
			g.Expect(got[other]).To(Equal(framework.Replicas{Spec: 1, Ready: 1}))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("descheduler spec: all four Ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	})
})
