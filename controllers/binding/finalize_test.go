package binding_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// undeletable labels a Work the test's admission policy refuses to delete.
const undeletable = "test.flotilla.io/undeletable"

// refuseDeletes installs a ValidatingAdmissionPolicy that denies deleting Works labelled
// undeletable, and waits until the apiserver enforces it.
func refuseDeletes(ctx context.Context) {
	GinkgoHelper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "test-undeletable-works"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"work.karmada.io"}, APIVersions: []string{"*"}, Resources: []string{"works"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `!has(oldObject.metadata.labels) || !('` + undeletable + `' in oldObject.metadata.labels)`,
				Message:    "this Work is labelled undeletable",
			}},
		},
	}
	Expect(env.Host.Create(ctx, policy)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, policy))).To(Succeed()) })
	pb := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-undeletable-works"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	Expect(env.Host.Create(ctx, pb)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, pb))).To(Succeed()) })

	// A canary Work shows when the policy is in force.
	canary := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.ExecutionNamespace("member1"), Name: "canary",
		Labels: map[string]string{undeletable: "true"}}}
	Expect(env.Host.Create(ctx, canary)).To(Succeed())
	Eventually(func() error { return env.Host.Delete(ctx, canary, client.DryRunAll) }).WithContext(ctx).
		Should(MatchError(ContainSubstring("undeletable")))
	Expect(env.Host.Patch(ctx, canary, client.RawPatch(types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/labels/test.flotilla.io~1undeletable"}]`)))).To(Succeed())
	Expect(env.Host.Delete(ctx, canary)).To(Succeed())
}

var _ = Describe("Finalizing a binding", func() {
	It("does not delete again a Work already being deleted when finalizing runs again", func(ctx SpecContext) {
		refuseDeletes(ctx)
		ns := "bind-delete-once"
		cm, rb := boundEverywhere(ctx, ns)
		stuck, deleting := workKey("member2", cm), workKey("member1", cm)
		Expect(env.Host.Patch(ctx, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: stuck.Namespace, Name: stuck.Name}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+undeletable+`":"true"}}}`)))).To(Succeed())
		path := func(k types.NamespacedName) string {
			return "/apis/work.karmada.io/v1alpha1/namespaces/" + k.Namespace + "/works/" + k.Name
		}

		By("member2's Work cannot be deleted, so the finalizing pass fails and runs again")
		Expect(env.Host.Delete(ctx, rb)).To(Succeed())
		Eventually(func() int { return env.ManagerRequests("DELETE", path(stuck)) }).WithContext(ctx).Should(BeNumerically(">=", 6))
		w := &workv1alpha1.Work{}
		Expect(env.Host.Get(ctx, deleting, w)).To(Succeed())
		Expect(w.DeletionTimestamp).NotTo(BeNil())
		// Once, or twice if the second pass came before the cache saw the first delete; not
		// once per pass.
		Expect(env.ManagerRequests("DELETE", path(deleting))).To(BeNumerically("<=", 2), "member1's Work, already being deleted, was deleted again by every pass")

		By("once member2's Work can go, both go and so does the binding")
		Expect(env.Host.Patch(ctx, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: stuck.Namespace, Name: stuck.Name}},
			client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/labels/test.flotilla.io~1undeletable"}]`)))).To(Succeed())
		for _, k := range []types.NamespacedName{deleting, stuck} {
			expectWorkDeleted(ctx, k, false)
		}
		Eventually(fleettest.Gone(ctx, env.Host, rb)).WithContext(ctx).Should(BeTrue())
		Expect(env.ManagerRequests("DELETE", path(deleting))).To(BeNumerically("<=", 2))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("Finalizing a binding whose new Works its cache does not show yet", func() {
	It("waits for them and deletes them, rather than leaving them without a binding", func(ctx SpecContext) {
		// A host of its own, where nothing but r reconciles, with a cache whose Works the
		// spec hides: a template deleted right after its binding wrote Works.
		own, mgr := fleettest.Isolated(ctx, "binding-lag", "member1")
		lagging := &laggingWorks{Client: mgr.GetClient()}
		r := &binding.Reconciler{Client: lagging, APIReader: mgr.GetAPIReader(), Recorder: events.NewFakeRecorder(100),
			Interpreter: interpreter.Interpreter{}, NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}

		own.TemplateNamespace(ctx, "lag")
		cm := fleettest.ConfigMap("lag", "cfg", map[string]string{"k": "v"})
		Expect(own.Host.Create(ctx, cm)).To(Succeed())
		rb := own.Binding(cm, 0, fleettest.Scheduled("member1", 0)...)
		Expect(own.Host.Create(ctx, rb)).To(Succeed())
		Eventually(func() error {
			return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(rb), &workv1alpha2.ResourceBinding{})
		}).
			WithContext(ctx).Should(Succeed())
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rb)}
		lagging.hide.Store(true)
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		work := &workv1alpha1.Work{}
		Expect(own.Host.Get(ctx, workKey("member1", cm), work)).To(Succeed(), "the Work was created")

		By("the binding deleted before the cache shows its Work")
		Expect(own.Host.Delete(ctx, rb)).To(Succeed())
		Eventually(func(g Gomega) {
			cached := &workv1alpha2.ResourceBinding{}
			g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(rb), cached)).To(Succeed())
			g.Expect(cached.DeletionTimestamp).NotTo(BeNil())
		}).WithContext(ctx).Should(Succeed())
		res, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		// Before, the finalizer was released at once and the Work stayed, with no binding.
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "finalizing waits for the cache")
		Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(rb), &workv1alpha2.ResourceBinding{})).To(Succeed(), "the binding is kept")

		By("the cache catching up")
		lagging.hide.Store(false)
		Eventually(func(g Gomega) {
			_, err := r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(own.Host.Get(ctx, workKey("member1", cm), work)).To(Succeed())
			g.Expect(work.DeletionTimestamp).NotTo(BeNil(), "the Work is deleted")
		}).WithContext(ctx).Should(Succeed())
		Eventually(fleettest.Gone(ctx, own.Host, rb)).WithContext(ctx).Should(BeTrue())
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("Unscheduling a cluster whose new Work its cache does not show yet", func() {
	It("waits for the Work and deletes it, rather than leaving it on a cluster the binding left", func(ctx SpecContext) {
		// A binding that leaves a cluster right after its Work there was created: the next pass
		// lists Works from a cache that does not show it, and a Work's creation brings no
		// binding back (found by the soak with sharded managers under load).
		own, mgr := fleettest.Isolated(ctx, "binding-lag-move", "member1")
		lagging := &laggingWorks{Client: mgr.GetClient()}
		r := &binding.Reconciler{Client: lagging, APIReader: mgr.GetAPIReader(), Recorder: events.NewFakeRecorder(100),
			Interpreter: interpreter.Interpreter{}, NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}

		own.TemplateNamespace(ctx, "lag-move")
		cm := fleettest.ConfigMap("lag-move", "cfg", map[string]string{"k": "v"})
		Expect(own.Host.Create(ctx, cm)).To(Succeed())
		rb := own.Binding(cm, 0, fleettest.Scheduled("member1", 0)...)
		Expect(own.Host.Create(ctx, rb)).To(Succeed())
		Eventually(func() error {
			return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(rb), &workv1alpha2.ResourceBinding{})
		}).WithContext(ctx).Should(Succeed())
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rb)}
		lagging.hide.Store(true)
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		work := &workv1alpha1.Work{}
		Expect(own.Host.Get(ctx, workKey("member1", cm), work)).To(Succeed(), "the Work was created")

		By("the binding leaves member1 before the cache shows its Work")
		cur := &workv1alpha2.ResourceBinding{}
		Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(rb), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Clusters = nil
		Expect(own.Host.Patch(ctx, cur, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			cached := &workv1alpha2.ResourceBinding{}
			g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(rb), cached)).To(Succeed())
			g.Expect(cached.Spec.Clusters).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
		res, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		// Before, the pass ended with nothing to come back for, and the Work stayed for good.
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "the pass comes back for the Work it cannot see yet")

		By("the cache catching up")
		lagging.hide.Store(false)
		Eventually(func(g Gomega) {
			_, err := r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(own.Host.Get(ctx, workKey("member1", cm), work)).To(Succeed())
			g.Expect(work.DeletionTimestamp).NotTo(BeNil(), "the Work is deleted")
		}).WithContext(ctx).Should(Succeed())
	}, SpecTimeout(2*time.Minute))
})

// laggingWorks lists no Works while hide is set: a cache that has not seen the Works just
// created.
type laggingWorks struct {
	client.Client
	hide atomic.Bool
}

func (l *laggingWorks) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*workv1alpha1.WorkList); ok && l.hide.Load() {
		return nil
	}
	return l.Client.List(ctx, list, opts...)
}
