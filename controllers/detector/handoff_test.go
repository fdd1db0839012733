package detector_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("Reading a template once", func() {
	It("makes a new template's binding from the claim's answer and hands that version to the binding controller", func(ctx SpecContext) {
		ns := "det-handoff"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "web", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"})
		web := fleettest.Deployment(ns, "web", 3)
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		expectClaimedBy(ctx, web, pp)

		Expect(templateReads.Gets(client.ObjectKeyFromObject(web))).To(BeNumerically("<=", 1),
			"the template is read whole at most once, to make its binding (not at all when its kind's feed saw it), and never written")
		b := rb(ns, "Deployment", "web")
		env.Get(ctx, Default, b)
		got, ok := templates.Take(web.UID, b.Spec.Resource.ResourceVersion)
		Expect(ok).To(BeTrue(), "the version the binding names is handed over")
		Expect(got.GetUID()).To(Equal(web.UID), "it is the claimed template")
		Expect(got.GetLabels()).NotTo(HaveKey(wellknown.PropagationPolicyPermanentIDLabel), "the claim is on the binding")
		replicas, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
		Expect(replicas).To(Equal(int64(3)))

		By("taking the new version when it changes and the claim stays")
		scale(ctx, web, b, 4)
		got, ok = templates.Take(web.UID, b.Spec.Resource.ResourceVersion)
		Expect(ok).To(BeTrue(), "the new version is handed over too")
		replicas, _, _ = unstructured.NestedInt64(got.Object, "spec", "replicas")
		Expect(replicas).To(Equal(int64(4)))
	})

	It("does not read a template at all once its kind's feed runs: the feed saw it whole", func(ctx SpecContext) {
		ns := "det-feed"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "all", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"})
		// The feed of Deployments in the namespace starts once the policy names the kind; a
		// template created before its watch is established is read from the host, as before.
		i := 0
		Eventually(func(g Gomega) {
			web := fleettest.Deployment(ns, fmt.Sprintf("web-%d", i), 2)
			i++
			Expect(env.Host.Create(ctx, web)).To(Succeed())
			expectClaimedBy(ctx, web, pp)
			g.Expect(templateReads.Gets(client.ObjectKeyFromObject(web))).To(BeZero(), "read from the host")
			b := rb(ns, "Deployment", web.Name)
			env.Get(ctx, Default, b)
			got, ok := templates.Take(web.UID, b.Spec.Resource.ResourceVersion)
			Expect(ok).To(BeTrue(), "the fed version is handed over to the binding controller")
			replicas, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
			Expect(replicas).To(Equal(int64(2)))
		}).WithContext(ctx).Should(Succeed())
	})
})
