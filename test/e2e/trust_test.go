package e2e

import (
	"context"
	"maps"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/hostguard"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// Trusted on a production host: the manager runs here as its own ServiceAccount with exactly
// the generated role and the shipped guard (framework.ManagerConfig).

// flotillaOwned lists the keys of a template's labels and annotations that Flotilla's field
// managers own: there must be none.
func flotillaOwned(obj client.Object) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if !strings.HasPrefix(mf.Manager, "flotilla") || mf.FieldsV1 == nil {
			continue
		}
		raw := string(mf.FieldsV1.Raw)
		if strings.Contains(raw, `"f:labels"`) || strings.Contains(raw, `"f:annotations"`) {
			out = append(out, mf.Manager+" "+string(mf.Operation)+" "+mf.Subresource)
		}
	}
	return out
}

var _ = Describe("Templates stay the user's", func() {
	It("propagates a Deployment and a ClusterRole granting rights the manager lacks, and writes neither template", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-trust")
		pp := policyTo(ns, "web", false, "member1")
		pp.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		dep := deploymentTemplate(ns, "web", 1)
		dep.Labels = map[string]string{"app": "web", "team": "shop"}
		dep.Annotations = map[string]string{"owner": "ops@example.com"}
		Expect(env.Host.Create(ctx, dep)).To(Succeed())

		// The manager holds no create on Deployments: a claim written into this ClusterRole
		// was refused by the apiserver's escalation check, and it never propagated.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-trust-deployer", Labels: map[string]string{"team": "shop"},
			Annotations: map[string]string{"owner": "ops@example.com"}},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "delete"}}}}
		Expect(env.Host.Create(ctx, role)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = env.Host.Delete(ctx, role) })
		cpp := clusterPolicy("e2e-trust-deployer", []policyv1alpha1.ResourceSelector{{APIVersion: "rbac.authorization.k8s.io/v1",
			Kind: "ClusterRole", Name: role.Name}}, "member1")
		Expect(env.Host.Create(ctx, cpp)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = env.Host.Delete(ctx, cpp) })
		roleVersion := role.ResourceVersion

		Eventually(in(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, "member1")).WithContext(ctx).Should(ConsistOf("member1"))
		Eventually(in(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}, "member1")).WithContext(ctx).Should(ConsistOf("member1"))
		eventuallyAllApplied(ctx, ns, 1)

		By("the templates' labels and annotations are what the user applied, and Flotilla owns none of them")
		got := &appsv1.Deployment{}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(dep), got)).To(Succeed())
		Expect(got.Labels).To(Equal(dep.Labels))
		Expect(got.Annotations).To(Equal(dep.Annotations))
		Expect(flotillaOwned(got)).To(BeEmpty())
		gotRole := &rbacv1.ClusterRole{}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(role), gotRole)).To(Succeed())
		Expect(gotRole.ResourceVersion).To(Equal(roleVersion), "nothing wrote the ClusterRole")
		Expect(maps.Equal(gotRole.Labels, role.Labels) && maps.Equal(gotRole.Annotations, role.Annotations)).To(BeTrue())

		By("the claim is on the bindings")
		rb := claimBinding(ctx, ns, "web-deployment")
		Expect(rb.GetLabels()).To(HaveKeyWithValue(wellknown.PropagationPolicyPermanentIDLabel, Not(BeEmpty())))
		Expect(rb.GetAnnotations()).To(HaveKeyWithValue(wellknown.PropagationPolicyNameAnnotation, "web"))
		crb := claimBinding(ctx, "", "e2e-trust-deployer-clusterrole")
		Expect(crb.GetAnnotations()).To(HaveKeyWithValue(wellknown.ClusterPropagationPolicyNameAnnotation, cpp.Name))
	})
})

var _ = Describe("The manager's rights on the host", func() {
	It("cannot patch a Deployment in kube-system, a webhook configuration, or another namespace's labels", func(ctx context.Context) {
		user := hostguard.Username(wellknown.SystemNamespace, framework.ManagerServiceAccount)
		groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + wellknown.SystemNamespace, "system:authenticated"}
		canI := func(attrs authorizationv1.ResourceAttributes) bool {
			GinkgoHelper()
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: groups, ResourceAttributes: &attrs}}
			Expect(env.Host.Create(ctx, sar)).To(Succeed())
			return sar.Status.Allowed
		}
		By("kubectl auth can-i --as the manager: RBAC says no")
		Expect(canI(authorizationv1.ResourceAttributes{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "kube-system", Name: "coredns"})).To(BeFalse())
		Expect(canI(authorizationv1.ResourceAttributes{Verb: "patch", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "any"})).To(BeFalse())
		Expect(canI(authorizationv1.ResourceAttributes{Verb: "patch", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies", Name: hostguard.Name})).To(BeFalse(),
			"the manager cannot change its own guard")
		Expect(canI(authorizationv1.ResourceAttributes{Verb: "get", Resource: "deployments", Group: "apps", Namespace: "kube-system"})).To(BeTrue(),
			"it reads everything: templates are any kind")

		By("the guard denies what RBAC must grant broadly: a namespace's labels other than flotilla.io/held")
		cfg, err := env.ManagerConfig(ctx)
		Expect(err).NotTo(HaveOccurred())
		asManager, err := client.New(cfg, client.Options{Scheme: env.Host.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-trust-other"}}
		Expect(env.Host.Create(ctx, other)).To(Succeed())
		err = asManager.Patch(ctx, other, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`)), client.DryRunAll)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(hostguard.Name))
		Expect(asManager.Patch(ctx, other, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"`+wellknown.HeldLabel+`":"true"}}}`)), client.DryRunAll)).To(Succeed())
	})
})

// claimBinding waits for a ResourceBinding (ns set) or ClusterResourceBinding and returns it.
func claimBinding(ctx context.Context, ns, name string) client.Object {
	GinkgoHelper()
	var b client.Object = &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if ns == "" {
		b = &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	Eventually(func() error { return env.Host.Get(ctx, client.ObjectKeyFromObject(b), b) }).WithContext(ctx).Should(Succeed())
	return b
}
