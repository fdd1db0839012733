package binding_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("The Overridden condition when the cache does not show its last write", func() {
	It("writes Overridden=True once the override is fixed, though a stale copy shows no condition", func(ctx SpecContext) {
		// A host of its own, where nothing but r reconciles, and a client that shows r the
		// binding as it was before r wrote Overridden=False: a policy fixed a moment after
		// it failed. Success is not written for a binding that never failed, and a stale copy
		// looked like one, so the binding stayed Overridden=False.
		own, mgr := fleettest.Isolated(ctx, "binding-overridden", "member1")
		pinned := &fleettest.PinnedClient{Client: mgr.GetClient()}
		r := &binding.Reconciler{Client: pinned, APIReader: mgr.GetAPIReader(), Recorder: events.NewFakeRecorder(100),
			Interpreter: interpreter.Interpreter{}, NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}

		ns := "overridden"
		own.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 1)
		Expect(own.Host.Create(ctx, web)).To(Succeed())
		op := &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
			Spec: policyv1alpha1.OverrideSpec{ResourceSelectors: deploymentSelector("web"),
				OverrideRules: []policyv1alpha1.RuleWithCluster{{TargetCluster: onCluster("member1"), Overriders: policyv1alpha1.Overriders{
					Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/noSuchField", Operator: policyv1alpha1.OverriderOpReplace,
						Value: apiextensionsv1.JSON{Raw: []byte(`1`)}}},
				}}}}}
		Expect(own.Host.Create(ctx, op)).To(Succeed())
		rb := own.Binding(web, 1, fleettest.Scheduled("member1", 1)...).(*workv1alpha2.ResourceBinding)
		Expect(own.Host.Create(ctx, rb)).To(Succeed())
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rb)}
		// inCache waits until r's cache shows the OverridePolicy at its current generation.
		inCache := func() {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				cached := &policyv1alpha1.OverridePolicy{}
				g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(op), cached)).To(Succeed())
				g.Expect(cached.Generation).To(Equal(op.Generation))
				g.Expect(mgr.GetClient().Get(ctx, req.NamespacedName, &workv1alpha2.ResourceBinding{})).To(Succeed())
			}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
		}
		overriddenIs := func(want metav1.ConditionStatus) {
			GinkgoHelper()
			c := own.ReconcileBinding(ctx, r, req, wellknown.ConditionOverridden)
			Expect(c).NotTo(BeNil())
			Expect(c.Status).To(Equal(want), "Overridden on the host")
		}

		By("r's reads of the binding stay at this version, with no Overridden condition")
		inCache()
		pinned.Pinned = rb.DeepCopy()
		Expect(own.Host.Get(ctx, req.NamespacedName, pinned.Pinned)).To(Succeed())
		overriddenIs(metav1.ConditionFalse)

		By("fixing the policy")
		patch := client.MergeFrom(op.DeepCopy())
		op.Spec.OverrideRules[0].Overriders.Plaintext[0] = policyv1alpha1.PlaintextOverrider{Path: "/spec/minReadySeconds",
			Operator: policyv1alpha1.OverriderOpAdd, Value: apiextensionsv1.JSON{Raw: []byte(`5`)}}
		Expect(own.Host.Patch(ctx, op, patch)).To(Succeed())
		inCache()
		// Before, the stale copy had no condition, so success was not written.
		overriddenIs(metav1.ConditionTrue)
	}, SpecTimeout(2*time.Minute))
})
