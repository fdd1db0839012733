package detector_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("A watch's initial list", func() {
	// After a restart, every template comes back in the initial lists. Those the detector
	// bound before are checked at low priority; one with no binding (created while the
	// manager was down, or during its start) waits for its binding and goes first.
	It("queues the templates that have no binding of theirs ahead of those bound", func(ctx SpecContext) {
		ns := "det-initial"
		env.TemplateNamespace(ctx, ns)
		createPP(ctx, ns, "all", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap"})
		key := func(name string) detector.Key {
			return detector.Key{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
		}
		var list []detector.InitialTemplate
		for i := range 3 {
			cm := fleettest.ConfigMap(ns, fmt.Sprintf("bound-%d", i), map[string]string{"k": "v"})
			Expect(env.Host.Create(ctx, cm)).To(Succeed())
			Eventually(func(g Gomega) types.UID {
				b := &workv1alpha2.ResourceBinding{}
				g.Expect(hostCache.Get(ctx, client.ObjectKeyFromObject(rb(ns, "ConfigMap", cm.Name)), b)).To(Succeed())
				return b.Spec.Resource.UID
			}).WithContext(ctx).Should(Equal(cm.UID))
			list = append(list, detector.InitialTemplate{Key: key(cm.Name), UID: cm.UID})
		}
		// bound-2 as if deleted and made again while the manager was down: its binding is
		// the old one's.
		list[2].UID = "made-again"
		// A template the detector has not seen yet.
		list = append(list, detector.InitialTemplate{Key: key("new"), UID: "new"})

		want := []detector.Key{key("bound-2"), key("new"), key("bound-0"), key("bound-1")}
		order, _ := detector.InitialOrder(hostCache, list, false)
		Expect(order).To(Equal(want))

		By("delivering the list before the cache's bindings have synced (the watches do not wait for them)")
		order, queued := detector.InitialOrder(hostCache, list, true)
		Expect(queued).To(BeZero(), "held until the bindings sync, when they can be sorted")
		Expect(order).To(Equal(want))
	})
})
