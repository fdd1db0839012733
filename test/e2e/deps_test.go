package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// The members' apiservers admit a Pod only once its ServiceAccount exists there, so Ready
// pods on a member prove the ServiceAccount came along; the ConfigMap and Secret are checked
// directly (kwok runs no kubelet that would mount them).
var _ = Describe("propagateDeps", func() {
	It("runs a Deployment whose ConfigMap, Secret and ServiceAccount exist only on the host with Ready pods on two members", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-deps")
		deps := []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}, Data: map[string]string{"mode": "fleet"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-secret"}, StringData: map[string]string{"token": "t"}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-runner"}},
		}
		for _, d := range deps {
			Expect(env.Host.Create(ctx, d)).To(Succeed())
		}
		web := deploymentTemplate(ns, "web", 4)
		spec := &web.Spec.Template.Spec
		spec.ServiceAccountName = "web-runner"
		spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}, Key: "mode"}}}}
		spec.Volumes = []corev1.Volume{{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-secret"}}}}
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		two := []string{"member1", "member2"}
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: policyv1alpha1.PropagationSpec{
				PropagateDeps:     true,
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: two},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					},
				},
			}})).To(Succeed())

		Eventually(func(g Gomega) {
			for _, m := range two {
				d := &appsv1.Deployment{}
				g.Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(web), d)).To(Succeed())
				g.Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(2), "%s; %s", podState(ctx, m, ns, "web"), bindingState(ctx, ns, "web"))
				for _, dep := range deps {
					gvk, err := env.Host.GroupVersionKindFor(dep)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(dep), dep.DeepCopyObject().(client.Object))).To(Succeed(),
						"%s on %s; %s", gvk.Kind, m, bindingStateOf(ctx, ns, gvk.Kind, dep.GetName()))
				}
			}
		}).WithContext(ctx).Should(Succeed())
		cm := &corev1.ConfigMap{}
		Expect(env.Members["member1"].Get(ctx, client.ObjectKeyFromObject(deps[0]), cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("mode", "fleet"))
		err := env.Members["member3"].Get(ctx, client.ObjectKeyFromObject(deps[0]), &corev1.ConfigMap{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "member3 runs no workload that needs the ConfigMap: %v", err)

		By("deleting the workload removes its dependencies from the members")
		Expect(env.Host.Delete(ctx, web)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, m := range two {
				err := env.Members[m].Get(ctx, client.ObjectKeyFromObject(deps[0]), &corev1.ConfigMap{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), m)
			}
		}).WithContext(ctx).Should(Succeed())
	})
})
