package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("Built-in interpreters", func() {
	It("divide an OpenKruise CloneSet by weight, read its members' health and add up their status, with no customization on the host", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-builtin")
		gvk := schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
		crd := fleettest.CRD("apps.kruise.io", "CloneSet")
		crd.Spec.Versions[0].Name = "v1alpha1"
		u := fleettest.AsUnstructured(crd)
		Expect(env.Host.Create(ctx, u)).To(Succeed())
		crdPolicy := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "e2e-builtin-crd"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}}},
			}}
		Expect(env.Host.Create(ctx, crdPolicy)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, u)
			_ = env.Host.Delete(ctx, crdPolicy)
		})
		Eventually(func(g Gomega) {
			for _, m := range []string{"member1", "member2"} {
				c := &clusterv1alpha1.Cluster{}
				g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: m}, c)).To(Succeed())
				served := false
				for _, e := range c.Status.APIEnablements {
					for _, r := range e.Resources {
						served = served || (e.GroupVersion == "apps.kruise.io/v1alpha1" && r.Kind == "CloneSet")
					}
				}
				g.Expect(served).To(BeTrue(), "%s serves CloneSet", m)
			}
		}).WithContext(ctx).Should(Succeed())

		cs := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
			"metadata": map[string]any{"namespace": ns, "name": "api"},
			"spec": map[string]any{
				"replicas": int64(6),
				"selector": map[string]any{"matchLabels": map[string]any{"app": "api"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "api"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "api", "image": "shop/api:2.0",
						"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}}}}},
				},
			},
		}}
		Eventually(func() error { return env.Host.Create(ctx, cs.DeepCopy()) }).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "api"}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
						WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
							{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}, Weight: 2},
							{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}, Weight: 1},
						}},
					},
				},
			}})).To(Succeed())

		member := func(g Gomega, m string) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			g.Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(cs), u)).To(Succeed())
			return u
		}
		By("the built-in's replicas and requirement are divided by weight: 6 → 4 + 2")
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api-cloneset"}, rb)).To(Succeed())
			g.Expect(rb.Spec.Replicas).To(BeEquivalentTo(6), "binding %+v", rb.Spec)
			g.Expect(rb.Spec.ReplicaRequirements).NotTo(BeNil())
			g.Expect(rb.Spec.ReplicaRequirements.ResourceRequest.Cpu().MilliValue()).To(BeEquivalentTo(100))
			for m, want := range map[string]int64{"member1": 4, "member2": 2} {
				n, _, _ := unstructured.NestedInt64(member(g, m).Object, "spec", "replicas")
				g.Expect(n).To(Equal(want), m)
			}
		}).WithContext(ctx).Should(Succeed())

		By("Kruise's controller in each member reports; the binding says Healthy and the template gets the sums")
		for m, n := range map[string]int64{"member1": 4, "member2": 2} {
			Eventually(func(g Gomega) {
				u := member(g, m)
				u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(), "replicas": n, "readyReplicas": n,
					"availableReplicas": n, "updatedReplicas": n, "updatedReadyReplicas": n, "expectedUpdatedReplicas": n,
					"updateRevision": "api-7b9c", "currentRevision": "api-7b9c", "labelSelector": "app=api"}
				g.Expect(env.Members[m].Status().Update(ctx, u)).To(Succeed())
			}).WithContext(ctx).Should(Succeed())
		}
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api-cloneset"}, rb)).To(Succeed())
			g.Expect(rb.Status.AggregatedStatus).To(HaveLen(2))
			for _, it := range rb.Status.AggregatedStatus {
				g.Expect(it.Health).To(Equal(workv1alpha1.ResourceHealthy), it.ClusterName)
			}
			t := &unstructured.Unstructured{}
			t.SetGroupVersionKind(gvk)
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(cs), t)).To(Succeed())
			status, _, _ := unstructured.NestedMap(t.Object, "status")
			g.Expect(status).To(HaveKeyWithValue("replicas", BeEquivalentTo(6)))
			g.Expect(status).To(HaveKeyWithValue("availableReplicas", BeEquivalentTo(6)))
			g.Expect(status).To(HaveKeyWithValue("updateRevision", "api-7b9c"))
		}).WithContext(ctx).Should(Succeed())

		By("a member falling behind is Unhealthy")
		Eventually(func(g Gomega) {
			u := member(g, "member2")
			_ = unstructured.SetNestedField(u.Object, int64(1), "status", "availableReplicas")
			g.Expect(env.Members["member2"].Status().Update(ctx, u)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api-cloneset"}, rb)).To(Succeed())
			health := map[string]workv1alpha1.ResourceHealth{}
			for _, it := range rb.Status.AggregatedStatus {
				health[it.ClusterName] = it.Health
			}
			g.Expect(health).To(Equal(map[string]workv1alpha1.ResourceHealth{"member1": workv1alpha1.ResourceHealthy, "member2": workv1alpha1.ResourceUnhealthy}))
		}).WithContext(ctx).Should(Succeed())
	})
})
