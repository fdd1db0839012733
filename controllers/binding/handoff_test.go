package binding_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("Templates handed over by the detector", func() {
	It("renders the version the binding names from the hand-off, and reads the host for any other", func(ctx SpecContext) {
		web := webTemplate(ctx, "bind-handoff")
		read := &unstructured.Unstructured{}
		read.SetAPIVersion("apps/v1")
		read.SetKind("Deployment")
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(web), read)).To(Succeed())
		templates.Put(read)

		rb := env.Binding(web, 2, fleettest.Scheduled("member1", 2)...)
		bindings.Spec(rb).Resource.ResourceVersion = read.GetResourceVersion()
		Expect(env.Host.Create(ctx, rb)).To(Succeed())
		manifest(ctx, "member1", web, func(g Gomega, _ *workv1alpha1.Work, m *unstructured.Unstructured) {
			g.Expect(replicasOf(g, m)).To(Equal(int64(2)))
		})
		Expect(templateReads.Gets(client.ObjectKeyFromObject(web))).To(BeZero(), "the template was handed over: no host read")
		Expect(templates.Len()).To(BeZero(), "a hand-off is taken once")

		By("reading the host for a version not handed over")
		patch := client.MergeFrom(web.DeepCopy())
		web.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
		Expect(env.Host.Patch(ctx, web, patch)).To(Succeed())
		rbPatch := client.MergeFrom(rb.DeepCopyObject().(client.Object))
		bindings.Spec(rb).Resource.ResourceVersion = web.ResourceVersion
		bindings.Spec(rb).Clusters = fleettest.Scheduled("member1", 1, "member2", 1)
		Expect(env.Host.Patch(ctx, rb, rbPatch)).To(Succeed())
		for _, c := range clusterNames {
			manifest(ctx, c, web, func(g Gomega, _ *workv1alpha1.Work, m *unstructured.Unstructured) {
				g.Expect(imageOf(g, m)).To(Equal("nginx:1.27"))
			})
		}
		Expect(templateReads.Gets(client.ObjectKeyFromObject(web))).To(BeNumerically(">=", 1))
	})
})
