package e2e

import (
	"context"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/hostclient"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

func scenario(parts ...string) string {
	return filepath.Join(append([]string{framework.RepoRoot(), "test", "testdata", "scenarios"}, parts...)...)
}

// optIn labels the namespace so its objects become templates, and waits until the host holds
// them.
func optIn(ctx context.Context, ns string) {
	n := &corev1.Namespace{}
	Expect(env.Host.Get(ctx, types.NamespacedName{Name: ns}, n)).To(Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[wellknown.PropagationLabel] = wellknown.PropagationEnabled
	Expect(env.Host.Patch(ctx, n, patch)).To(Succeed())
	awaitHold(ctx, ns)
}

func bindingConditionsTrue(ctx context.Context, ns, name string) func(Gomega) {
	return func(g Gomega) {
		rb := &workv1alpha2.ResourceBinding{}
		g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rb)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue(), "Scheduled: %+v", rb.Status.Conditions)
		g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionFullyApplied)).To(BeTrue(), "FullyApplied: %+v", rb.Status.Conditions)
	}
}

var _ = Describe("Scenario weighted-pipy", Ordered, func() {
	var first map[string]framework.Replicas

	BeforeAll(func(ctx context.Context) { optIn(ctx, "default") })

	It("1. holds the template when no policy matches, with one warning event", func(ctx context.Context) {
		Expect(framework.Apply(ctx, env.Host, scenario("weighted-pipy", "app.yaml"))).To(Succeed())
		Eventually(func(g Gomega) {
			evs := framework.EventsFor(ctx, g, env.Host, "default", "Deployment", "pipy")
			g.Expect(evs).To(ContainElement(And(HaveField("Reason", wellknown.EventReasonApplyPolicyFailed), HaveField("Note", wellknown.MessageNoPolicyMatch))))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			for m, r := range env.DeploymentReplicas(ctx, "default", "pipy") {
				g.Expect(r.Spec).To(BeEquivalentTo(-1), "pipy reached %s without a policy", m)
			}
		}).WithContext(ctx).WithTimeout(2e9).Should(Succeed())
	})

	It("2. splits 2 replicas 1/1 over two of three members; the Service reaches all three", func(ctx context.Context) {
		Expect(framework.Apply(ctx, env.Host, scenario("weighted-pipy", "policy.yaml"))).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, "default", "pipy")
			var ones, absent int
			for _, r := range got {
				switch {
				case r.Spec == 1 && r.Ready == 1:
					ones++
				case r.Spec == -1:
					absent++
				}
			}
			g.Expect([]int{ones, absent}).To(Equal([]int{2, 1}), "replicas per member: %v", got)
			first = got
		}).WithContext(ctx).Should(Succeed())
		for m, c := range env.Members {
			Eventually(func() error {
				return c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pipy"}, &corev1.Service{})
			}).WithContext(ctx).Should(Succeed(), "Service pipy is missing on %s", m)
		}
		Eventually(bindingConditionsTrue(ctx, "default", "pipy-deployment")).WithContext(ctx).Should(Succeed())

		By("the manager's writes to the host are under its own field managers, not its binary's name")
		rb := &workv1alpha2.ResourceBinding{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pipy-deployment"}, rb)).To(Succeed())
		tmpl := &appsv1.Deployment{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pipy"}, tmpl)).To(Succeed())
		works := &workv1alpha1.WorkList{}
		Expect(env.Host.List(ctx, works, client.MatchingLabels{wellknown.ResourceBindingPermanentIDLabel: rb.Labels[wellknown.ResourceBindingPermanentIDLabel]})).To(Succeed())
		Expect(works.Items).NotTo(BeEmpty())
		objs := []client.Object{rb, tmpl}
		for i := range works.Items {
			objs = append(objs, &works.Items[i])
		}
		for _, o := range objs {
			for _, mf := range o.GetManagedFields() {
				if mf.Manager != "e2e" {
					Expect(mf.Manager).To(HavePrefix("flotilla-"), "%T %s: field manager %q (%s %s)", o, o.GetName(), mf.Manager, mf.Operation, mf.Subresource)
				}
			}
		}
		Expect(rb.GetManagedFields()).To(ContainElement(HaveField("Manager", hostclient.FieldManager)), "the binding's create")
	})

	It("3. scaling to 3 gives 1/1/1 and keeps the first two", func(ctx context.Context) {
		d := &appsv1.Deployment{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pipy"}, d)).To(Succeed())
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To[int32](3)
		Expect(env.Host.Patch(ctx, d, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, "default", "pipy")
			for m, r := range got {
				g.Expect(r).To(Equal(framework.Replicas{Spec: 1, Ready: 1}), "member %s: %v", m, got)
			}
		}).WithContext(ctx).Should(Succeed())
		for m, r := range first {
			if r.Spec == 1 {
				Expect(env.DeploymentReplicas(ctx, "default", "pipy")[m].Spec).To(BeEquivalentTo(1), "%s lost its replica", m)
			}
		}
	})

	It("4. the curl client runs only on member3", func(ctx context.Context) {
		Expect(framework.Apply(ctx, env.Host, scenario("weighted-pipy", "client.yaml"))).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, "default", "curl")
			g.Expect(got).To(Equal(map[string]framework.Replicas{
				"member1": {Spec: -1, Ready: -1}, "member2": {Spec: -1, Ready: -1}, "member3": {Spec: 1, Ready: 1},
			}))
		}).WithContext(ctx).Should(Succeed())
	})
})

var _ = Describe("Scenario nginx-override", Ordered, func() {
	BeforeAll(func(ctx context.Context) { optIn(ctx, "default") })

	It("runs 1 replica on member1 and member2, with the override on member1 only", func(ctx context.Context) {
		Expect(framework.Apply(ctx, env.Host, scenario("nginx-override", "all.yaml"))).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, "default", "nginx")
			g.Expect(got).To(Equal(map[string]framework.Replicas{
				"member1": {Spec: 1, Ready: 1}, "member2": {Spec: 1, Ready: 1}, "member3": {Spec: -1, Ready: -1},
			}))
		}).WithContext(ctx).Should(Succeed())

		// The OverridePolicy comes after the Deployment and its policy in the file: member1's
		// first copy may be the template's own, and the override follows (a policy that
		// lists it in dependentOverrides waits for it instead).
		key := types.NamespacedName{Namespace: "default", Name: "nginx"}
		Eventually(func(g Gomega) {
			d1, d2 := &appsv1.Deployment{}, &appsv1.Deployment{}
			g.Expect(env.Members["member1"].Get(ctx, key, d1)).To(Succeed())
			g.Expect(env.Members["member2"].Get(ctx, key, d2)).To(Succeed())
			g.Expect(d1.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.internal/library/nginx:1.27"))
			g.Expect(d1.Labels).To(HaveKeyWithValue("site", "primary"))
			g.Expect(d2.Spec.Template.Spec.Containers[0].Image).To(Equal("docker.io/library/nginx:1.27"))
			g.Expect(d2.Labels).NotTo(HaveKey("site"))
		}).WithContext(ctx).Should(Succeed())
		Eventually(bindingConditionsTrue(ctx, "default", "nginx-deployment")).WithContext(ctx).Should(Succeed())
	})
})
