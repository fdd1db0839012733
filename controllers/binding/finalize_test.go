package binding_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
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
