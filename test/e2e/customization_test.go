package e2e

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

const cacheScripts = `
function GetReplicas(obj)
  return obj.spec.size, nil
end`

const cacheRevise = `
function ReviseReplica(obj, replicas)
  obj.spec.size = replicas
  return obj
end`

const cacheHealth = `
function InterpretHealth(obj)
  return obj.status ~= nil and obj.status.readyNodes == obj.spec.size
end`

// cacheAggregate sums the members' ready nodes onto the template, reading its spec.
const cacheAggregate = `
function AggregateStatus(desired, items)
  items = items or {} -- nil when no member has reported yet, as in Karmada
  local ready = 0
  for i = 1, #items do
    if items[i].status ~= nil and items[i].status.readyNodes ~= nil then
      ready = ready + items[i].status.readyNodes
    end
  end
  desired.status = {readyNodes = ready, size = desired.spec.size}
  return desired
end`

const cacheReflect = `
function ReflectStatus(obj)
  if obj.status == nil then return nil end
  return {readyNodes = obj.status.readyNodes, phase = obj.status.phase}
end`

var _ = Describe("ResourceInterpreterCustomization", func() {
	It("makes a custom kind with spec.size divide by weight and report health, and an edit applies without a restart", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-ric")
		cacheGVK := schema.GroupVersionKind{Group: "example.flotilla.io", Version: "v1", Kind: "Cache"}
		// The CRD goes to the members as a template, so their Clusters list the kind at once
		// (a kind a member does not serve is not scheduled there).
		crd := fleettest.AsUnstructured(fleettest.CRD("example.flotilla.io", "Cache"))
		Expect(env.Host.Create(ctx, crd)).To(Succeed())
		crdPolicy := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "e2e-ric-crd"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.GetName()}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}}},
			}}
		Expect(env.Host.Create(ctx, crdPolicy)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, crd)
			_ = env.Host.Delete(ctx, crdPolicy)
		})
		Eventually(func(g Gomega) {
			for _, m := range []string{"member1", "member2"} {
				c := &clusterv1alpha1.Cluster{}
				g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: m}, c)).To(Succeed())
				served := false
				for _, e := range c.Status.APIEnablements {
					for _, r := range e.Resources {
						served = served || (e.GroupVersion == "example.flotilla.io/v1" && r.Kind == "Cache")
					}
				}
				g.Expect(served).To(BeTrue(), "%s serves Cache", m)
			}
		}).WithContext(ctx).Should(Succeed())
		ric := &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: "caches"},
			Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
				Target: configv1alpha1.CustomizationTarget{APIVersion: "example.flotilla.io/v1", Kind: "Cache"},
				Customizations: configv1alpha1.CustomizationRules{
					ReplicaResource:      &configv1alpha1.ReplicaResourceRequirement{LuaScript: cacheScripts},
					ReplicaRevision:      &configv1alpha1.ReplicaRevision{LuaScript: cacheRevise},
					HealthInterpretation: &configv1alpha1.HealthInterpretation{LuaScript: cacheHealth},
					StatusReflection:     &configv1alpha1.StatusReflection{LuaScript: cacheReflect},
					StatusAggregation:    &configv1alpha1.StatusAggregation{LuaScript: cacheAggregate},
				},
			}}
		Expect(env.Host.Create(ctx, ric)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = env.Host.Delete(ctx, ric) })
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(ric), ric)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(ric.Status.Conditions, configv1alpha1.ConditionLoaded)).To(BeTrue(), "%+v", ric.Status)
		}).WithContext(ctx).Should(Succeed())

		cache := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.flotilla.io/v1", "kind": "Cache",
			"metadata": map[string]any{"namespace": ns, "name": "sessions"},
			"spec":     map[string]any{"size": int64(6)},
		}}
		Eventually(func() error { return env.Host.Create(ctx, cache.DeepCopy()) }).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sessions"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "example.flotilla.io/v1", Kind: "Cache", Name: "sessions"}},
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

		memberSize := func(g Gomega, m string) int64 {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(cacheGVK)
			g.Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(cache), u)).To(Succeed())
			n, _, err := unstructured.NestedInt64(u.Object, "spec", "size")
			g.Expect(err).NotTo(HaveOccurred())
			return n
		}
		By("the script's replicas are divided by weight: 6 → 4 + 2")
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sessions-cache"}, rb)).To(Succeed())
			g.Expect(rb.Spec.Replicas).To(BeEquivalentTo(6), "binding %+v", rb.Spec)
			g.Expect(memberSize(g, "member1")).To(BeEquivalentTo(4), "clusters %+v", rb.Spec.Clusters)
			g.Expect(memberSize(g, "member2")).To(BeEquivalentTo(2))
		}).WithContext(ctx).Should(Succeed())

		By("the operator in each member reports ready nodes; the binding collects them and says Healthy")
		setStatus := func(m string, status map[string]any) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(cacheGVK)
				g.Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(cache), u)).To(Succeed())
				u.Object["status"] = status
				g.Expect(env.Members[m].Status().Update(ctx, u)).To(Succeed())
			}).WithContext(ctx).Should(Succeed())
		}
		setStatus("member1", map[string]any{"readyNodes": int64(4), "phase": "Warming"})
		setStatus("member2", map[string]any{"readyNodes": int64(2), "phase": "Warming"})
		health := func(g Gomega) map[string]string {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sessions-cache"}, rb)).To(Succeed())
			out := map[string]string{}
			for _, it := range rb.Status.AggregatedStatus {
				status := ""
				if it.Status != nil {
					status = string(it.Status.Raw)
				}
				out[it.ClusterName] = fmt.Sprintf("%s %s", it.Health, status)
			}
			return out
		}
		Eventually(health).WithContext(ctx).Should(Equal(map[string]string{
			"member1": string(workv1alpha1.ResourceHealthy) + ` {"phase":"Warming","readyNodes":4}`,
			"member2": string(workv1alpha1.ResourceHealthy) + ` {"phase":"Warming","readyNodes":2}`,
		}))

		By("the customization's AggregateStatus writes the fleet's status onto the template")
		Eventually(func(g Gomega) map[string]any {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(cacheGVK)
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(cache), u)).To(Succeed())
			status, _, _ := unstructured.NestedMap(u.Object, "status")
			return status
		}).WithContext(ctx).Should(Equal(map[string]any{"readyNodes": int64(6), "size": int64(6)}))

		By("editing the customization changes health and replicas without a restart")
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(ric), ric)).To(Succeed())
		ric.Spec.Customizations.HealthInterpretation.LuaScript = `
function InterpretHealth(obj)
  return obj.status ~= nil and obj.status.phase == "Serving"
end`
		ric.Spec.Customizations.ReplicaResource.LuaScript = `
function GetReplicas(obj)
  return obj.spec.size + 3, nil
end`
		Expect(env.Host.Update(ctx, ric)).To(Succeed())
		Eventually(func(g Gomega) {
			h := health(g)
			g.Expect(h["member1"]).To(HavePrefix(string(workv1alpha1.ResourceUnhealthy)))
			g.Expect(h["member2"]).To(HavePrefix(string(workv1alpha1.ResourceUnhealthy)))
			g.Expect(memberSize(g, "member1")).To(BeEquivalentTo(6), "9 → 6 + 3")
			g.Expect(memberSize(g, "member2")).To(BeEquivalentTo(3))
		}).WithContext(ctx).Should(Succeed())

		By("a script that fails marks the customization and never the manager")
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(ric), ric)).To(Succeed())
		ric.Spec.Customizations.HealthInterpretation.LuaScript = `
function InterpretHealth(obj)
  error("no health for " .. obj.metadata.name)
end`
		Expect(env.Host.Update(ctx, ric)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(ric), ric)).To(Succeed())
			c := meta.FindStatusCondition(ric.Status.Conditions, configv1alpha1.ConditionScriptsHealthy)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("no health for sessions"))
			h := health(g)
			g.Expect(h["member1"]).To(HavePrefix(string(workv1alpha1.ResourceUnknownHealth)))
		}).WithContext(ctx).Should(Succeed())
	})
})
