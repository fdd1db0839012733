package namespace_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers/namespace"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var holdKey = types.NamespacedName{Name: namespace.HoldPolicyName}

func getPolicy(ctx context.Context, g Gomega) *admissionv1.ValidatingAdmissionPolicy {
	p := &admissionv1.ValidatingAdmissionPolicy{}
	g.Expect(env.Host.Get(ctx, holdKey, p)).To(Succeed())
	return p
}

func getBinding(ctx context.Context, g Gomega) *admissionv1.ValidatingAdmissionPolicyBinding {
	b := &admissionv1.ValidatingAdmissionPolicyBinding{}
	g.Expect(env.Host.Get(ctx, holdKey, b)).To(Succeed())
	return b
}

// expectHold waits until the policy and binding are as HoldPolicy and HoldBinding say.
func expectHold(ctx context.Context) {
	GinkgoHelper()
	want := namespace.HoldPolicy()
	Eventually(func(g Gomega) {
		p := getPolicy(ctx, g)
		g.Expect(p.Spec.FailurePolicy).To(HaveValue(Equal(admissionv1.Fail)))
		g.Expect(p.Spec.Validations).To(HaveLen(len(want.Spec.Validations)))
		for i, v := range want.Spec.Validations {
			g.Expect(p.Spec.Validations[i].Expression).To(Equal(*v.Expression))
			g.Expect(p.Spec.Validations[i].Message).To(Equal(*v.Message))
		}
		g.Expect(p.Spec.MatchConstraints.ResourceRules).To(HaveLen(4))
		g.Expect(p.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "flotilla"))

		b := getBinding(ctx, g)
		g.Expect(b.Spec.PolicyName).To(Equal(namespace.HoldPolicyName))
		g.Expect(b.Spec.ValidationActions).To(Equal([]admissionv1.ValidationAction{admissionv1.Deny}))
		g.Expect(b.Spec.MatchResources.NamespaceSelector.MatchLabels).To(Equal(
			map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}))
		g.Expect(b.Spec.MatchResources.NamespaceSelector.MatchExpressions).To(ConsistOf(metav1.LabelSelectorRequirement{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn,
			Values: []string{"kube-system", "kube-public", "kube-node-lease", wellknown.SystemNamespace},
		}))
	}).WithContext(ctx).Should(Succeed())
}

var _ = Describe("The host hold", Ordered, func() {
	It("is applied at start-up: the ValidatingAdmissionPolicy and its binding", func(ctx SpecContext) {
		expectHold(ctx)
	})

	It("puts the policy back when it is deleted", func(ctx SpecContext) {
		old := getPolicy(ctx, Default)
		Expect(env.Host.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getPolicy(ctx, g).UID).NotTo(Equal(old.UID))
		}).WithContext(ctx).Should(Succeed())
		expectHold(ctx)
	})

	It("puts the binding back when it is deleted", func(ctx SpecContext) {
		old := getBinding(ctx, Default)
		Expect(env.Host.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getBinding(ctx, g).UID).NotTo(Equal(old.UID))
		}).WithContext(ctx).Should(Succeed())
		expectHold(ctx)
	})

	It("undoes edits of the policy", func(ctx SpecContext) {
		p := getPolicy(ctx, Default)
		patch := client.MergeFrom(p.DeepCopy())
		p.Spec.FailurePolicy = ptr.To(admissionv1.Ignore)
		p.Spec.Validations = p.Spec.Validations[:1]
		Expect(env.Host.Patch(ctx, p, patch)).To(Succeed())
		expectHold(ctx)
	})

	It("undoes an edit of the binding's policy name", func(ctx SpecContext) {
		b := getBinding(ctx, Default)
		patch := client.MergeFrom(b.DeepCopy())
		b.Spec.PolicyName = "someone-elses"
		Expect(env.Host.Patch(ctx, b, patch)).To(Succeed())
		expectHold(ctx)
	})

	// Regression (issue 9): server-side apply merged validationActions ([Warn] + [Deny] is
	// invalid, so the hold errored forever at Warn) and matchLabels (an extra label made the
	// hold stop matching opted-in namespaces) with someone else's edit.
	It("undoes edits of the binding's validation actions and namespace selector", func(ctx SpecContext) {
		b := getBinding(ctx, Default)
		patch := client.MergeFrom(b.DeepCopy())
		b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
		b.Spec.MatchResources.NamespaceSelector.MatchLabels = map[string]string{
			wellknown.PropagationLabel: wellknown.PropagationEnabled, "someone": "else"}
		Expect(env.Host.Patch(ctx, b, patch)).To(Succeed())
		expectHold(ctx)
	})

	It("stops the host's Deployment controller from making ReplicaSets in template namespaces only", func(ctx SpecContext) {
		held := "hold-templates"
		env.TemplateNamespace(ctx, held)
		plain := "hold-plain"
		env.CreateNamespace(ctx, plain, nil)

		// The apiserver enforces a new or changed policy a moment after it is written.
		Eventually(func(g Gomega) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: held, Name: "probe"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
			err := env.Host.Create(ctx, pod, client.DryRunAll)
			g.Expect(err).To(MatchError(ContainSubstring(wellknown.PropagationLabel)))
		}).WithContext(ctx).Should(Succeed())

		for _, ns := range []string{held, plain} {
			Expect(env.Host.Create(ctx, fleettest.Deployment(ns, "web", 1))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(replicaSets(ctx, g, plain)).To(HaveLen(1))
		}).WithContext(ctx).Should(Succeed())

		// The host's Deployment controller tried in the held namespace, was denied, and says why.
		Eventually(func(g Gomega) {
			var denied []string
			for _, e := range coreEvents(ctx, g, held) {
				if e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == "web" && e.Type == corev1.EventTypeWarning {
					denied = append(denied, e.Reason+": "+e.Message)
				}
			}
			// The Deployment controller reports a failed ReplicaSet create as ReplicaSetCreateError.
			g.Expect(denied).To(ContainElement(And(HavePrefix("ReplicaSetCreateError: "),
				ContainSubstring(namespace.HoldPolicyName), ContainSubstring("ReplicaSets of Deployments"),
				ContainSubstring(wellknown.PropagationLabel))))
		}).WithContext(ctx).Should(Succeed())
		Expect(replicaSets(ctx, Default, held)).To(BeEmpty())
	})
})

func replicaSets(ctx context.Context, g Gomega, ns string) []appsv1.ReplicaSet {
	list := &appsv1.ReplicaSetList{}
	g.Expect(env.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// coreEvents lists the core/v1 events of a namespace: kube-controller-manager records those.
func coreEvents(ctx context.Context, g Gomega, ns string) []corev1.Event {
	list := &corev1.EventList{}
	g.Expect(env.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}
