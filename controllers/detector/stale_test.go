package detector_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// Issue 34, item 3: the detector does not trust a binding it last looked at. A placement
// edited A→B→A faster than the binding cache catches up leaves the host at B, which is the
// same as the binding's policy part changed on the host behind the detector's back: before,
// nothing brought the template back (the detector did not watch bindings) and the host kept B.
var _ = Describe("A binding changed behind the detector", func() {
	It("is brought back to the policy", func(ctx SpecContext) {
		ns := "det-stale-binding"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "cfg", selectConfigMap("cfg"))
		cm := fleettest.ConfigMap(ns, "cfg", nil)
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		expectClaimedBy(ctx, cm, pp)

		b := rb(ns, "ConfigMap", "cfg")
		env.Get(ctx, Default, b)
		Expect(env.Host.Patch(ctx, b, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"placement":{"clusterAffinity":{"clusterNames":["member3"]}}}}`)))).To(Succeed())
		Eventually(func(g Gomega) *policyv1alpha1.ClusterAffinity {
			env.Get(ctx, g, b)
			return b.Spec.Placement.ClusterAffinity
		}).WithContext(ctx).Should(Equal(pp.Spec.Placement.ClusterAffinity))
	})
})
