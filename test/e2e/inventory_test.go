package e2e

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers/clusterprofile"
)

// profileOf reads member's ClusterProfile from the profiles' namespace.
func profileOf(ctx context.Context, g Gomega, member string) *inventoryv1alpha1.ClusterProfile {
	p := &inventoryv1alpha1.ClusterProfile{}
	g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: wellknown.ClusterInventoryNamespace, Name: member}, p)).To(Succeed())
	return p
}

func property(p *inventoryv1alpha1.ClusterProfile, name string) string {
	for _, pr := range p.Status.Properties {
		if pr.Name == name {
			return pr.Value
		}
	}
	return ""
}

var _ = Describe("The fleet as a cluster inventory", func() {
	It("publishes every member as a ClusterProfile whose health follows the member's", func(ctx context.Context) {
		for _, m := range []string{"member1", "member2", "member3"} {
			Eventually(func(g Gomega) {
				p := profileOf(ctx, g, m)
				g.Expect(p.Spec.ClusterManager.Name).To(Equal("flotilla"))
				g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)).To(BeTrue())
				g.Expect(p.Status.Version.Kubernetes).NotTo(BeEmpty())
				g.Expect(property(p, clusterprofile.PropertyNodeCount)).To(Equal("2"), "the member's two kwok nodes")
				g.Expect(property(p, clusterprofile.PropertyCPUAllocatable)).NotTo(BeEmpty())
				g.Expect(p.Status.AccessProviders).NotTo(BeEmpty())
			}).WithContext(ctx).Should(Succeed(), m)
		}

		By("a member's outage shows on its profile, and its return")
		m3 := env.Fleet.Member("member3")
		Expect(m3.StopAPIServer()).To(Succeed())
		restarted := false
		DeferCleanup(func(ctx context.Context) {
			if !restarted {
				_ = m3.StartAPIServer(ctx)
			}
		})
		Eventually(func(g Gomega) metav1.ConditionStatus {
			c := meta.FindStatusCondition(profileOf(ctx, g, "member3").Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
			g.Expect(c).NotTo(BeNil())
			return c.Status
		}).WithContext(ctx).ShouldNot(Equal(metav1.ConditionTrue))
		Expect(m3.StartAPIServer(ctx)).To(Succeed())
		restarted = true
		env.EventuallyMemberSettled(ctx, "member3")
		Eventually(func(g Gomega) bool {
			return meta.IsStatusConditionTrue(profileOf(ctx, g, "member3").Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
		}).WithContext(ctx).Should(BeTrue())
	})

	It("publishes a binding's clusters as a PlacementDecision that follows a rescheduling", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-decision")
		pp := policyTo(ns, "all", false, "member1")
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "v1"))).To(Succeed())
		decided := func(g Gomega) []string {
			list := &inventoryv1alpha1.PlacementDecisionList{}
			g.Expect(env.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, d := range list.Items {
				for _, c := range d.Decisions {
					out = append(out, c.ClusterProfileRef.Name)
				}
			}
			slices.Sort(out)
			return out
		}
		Eventually(decided).WithContext(ctx).Should(Equal([]string{"member1"}))

		patch := client.MergeFrom(pp.DeepCopy())
		pp.Spec.Placement.ClusterAffinity.ClusterNames = []string{"member2", "member3"}
		Expect(env.Host.Patch(ctx, pp, patch)).To(Succeed())
		Eventually(decided).WithContext(ctx).Should(Equal([]string{"member2", "member3"}))

		Expect(env.Host.Delete(ctx, configMap(ns, "cm", ""))).To(Succeed())
		Eventually(decided).WithContext(ctx).Should(BeEmpty(), "removed with the binding")
	})
})
