package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// A Flink-style job: one jobmanager and spec.taskManager.replicas taskmanagers, each with
// its own cpu request.
const flinkComponents = `
function GetComponents(obj)
  local jm, tm = obj.spec.jobManager, obj.spec.taskManager
  return {
    {name = "jobmanager", replicas = 1, replicaRequirements = {resourceRequest = {cpu = jm.cpu}}},
    {name = "taskmanager", replicas = tm.replicas, replicaRequirements = {resourceRequest = {cpu = tm.cpu}}},
  }
end`

const flinkHealth = `
function InterpretHealth(obj)
  return obj.status ~= nil and obj.status.jobStatus == "RUNNING"
end`

const flinkReflect = `
function ReflectStatus(obj)
  if obj.status == nil then return nil end
  return {jobStatus = obj.status.jobStatus, readyTaskManagers = obj.status.readyTaskManagers}
end`

const flinkAggregate = `
function AggregateStatus(desired, items)
  local status = {jobStatus = "PENDING", readyTaskManagers = 0}
  for i = 1, #(items or {}) do
    local s = items[i].status
    if s ~= nil then
      status.jobStatus = s.jobStatus or status.jobStatus
      status.readyTaskManagers = status.readyTaskManagers + (s.readyTaskManagers or 0)
    end
  end
  desired.status = status
  return desired
end`

var _ = Describe("Multi-component workloads", func() {
	It("place a two-component Flink-style job whole on one member, per component, report its health and aggregate its status", func(ctx context.Context) {
		members := []string{"member1", "member2"}
		ns := templateNamespace(ctx, "e2e-components")
		crd := fleettest.CRD("flink.e2e.flotilla.io", "FlinkJob")
		gvk := fleettest.CRDKind(crd)
		u := fleettest.AsUnstructured(crd)
		Expect(env.Host.Create(ctx, u)).To(Succeed())
		crdPolicy := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "e2e-components-crd"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members}},
			}}
		Expect(env.Host.Create(ctx, crdPolicy)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, u)
			_ = env.Host.Delete(ctx, crdPolicy)
		})
		Eventually(func(g Gomega) {
			for _, m := range members {
				c := &clusterv1alpha1.Cluster{}
				g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: m}, c)).To(Succeed())
				served := false
				for _, e := range c.Status.APIEnablements {
					for _, r := range e.Resources {
						served = served || (e.GroupVersion == gvk.GroupVersion().String() && r.Kind == gvk.Kind)
					}
				}
				g.Expect(served).To(BeTrue(), "%s serves FlinkJob", m)
			}
		}).WithContext(ctx).Should(Succeed())

		ric := &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: "flinkjobs"},
			Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
				Target: configv1alpha1.CustomizationTarget{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
				Customizations: configv1alpha1.CustomizationRules{
					ComponentResource:    &configv1alpha1.ComponentResourceRequirement{LuaScript: flinkComponents},
					HealthInterpretation: &configv1alpha1.HealthInterpretation{LuaScript: flinkHealth},
					StatusReflection:     &configv1alpha1.StatusReflection{LuaScript: flinkReflect},
					StatusAggregation:    &configv1alpha1.StatusAggregation{LuaScript: flinkAggregate},
				},
			}}
		Expect(env.Host.Create(ctx, ric)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = env.Host.Delete(ctx, ric) })
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(ric), ric)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(ric.Status.Conditions, configv1alpha1.ConditionLoaded)).To(BeTrue(), "%+v", ric.Status)
		}).WithContext(ctx).Should(Succeed())

		job := fleettest.CustomResource(crd, ns, "wordcount", map[string]any{
			"jobManager":  map[string]any{"cpu": "100m"},
			"taskManager": map[string]any{"replicas": int64(3), "cpu": "200m"},
		})
		Eventually(func() error { return env.Host.Create(ctx, job.DeepCopy()) }).WithContext(ctx).Should(Succeed())
		// Divided: a component workload is not split across clusters, it goes whole to one.
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wordcount"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: "wordcount"}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					},
				},
			}})).To(Succeed())

		binding := func(g Gomega) *workv1alpha2.ResourceBinding {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wordcount-flinkjob"}, rb)).To(Succeed())
			return rb
		}
		By("the binding carries both components and is placed whole, per component, on one member")
		var placedOn string
		Eventually(func(g Gomega) {
			rb := binding(g)
			g.Expect(rb.Spec.Components).To(HaveLen(2), "spec %+v", rb.Spec)
			g.Expect(rb.Spec.Clusters).To(HaveLen(1), "clusters %+v", rb.Spec.Clusters)
			tc := rb.Spec.Clusters[0]
			g.Expect(members).To(ContainElement(tc.Name))
			g.Expect(tc.Components).To(Equal([]workv1alpha2.ComponentReplicas{{Name: "jobmanager", Replicas: 1}, {Name: "taskmanager", Replicas: 3}}))
			placedOn = tc.Name
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			m := &unstructured.Unstructured{}
			m.SetGroupVersionKind(gvk)
			g.Expect(env.Members[placedOn].Get(ctx, client.ObjectKeyFromObject(job), m)).To(Succeed())
			n, _, _ := unstructured.NestedInt64(m.Object, "spec", "taskManager", "replicas")
			g.Expect(n).To(BeEquivalentTo(3), "the member runs every taskmanager")
		}).WithContext(ctx).Should(Succeed())
		for _, other := range members {
			if other == placedOn {
				continue
			}
			Consistently(func(g Gomega) {
				m := &unstructured.Unstructured{}
				m.SetGroupVersionKind(gvk)
				err := env.Members[other].Get(ctx, client.ObjectKeyFromObject(job), m)
				g.Expect(client.IgnoreNotFound(err)).To(Succeed())
				g.Expect(err).To(HaveOccurred(), "%s must not run a part of the job", other)
			}).WithContext(ctx).Should(Succeed())
		}

		By("the member's operator reports the job running: healthy on the binding, aggregated on the template")
		Eventually(func(g Gomega) {
			m := &unstructured.Unstructured{}
			m.SetGroupVersionKind(gvk)
			g.Expect(env.Members[placedOn].Get(ctx, client.ObjectKeyFromObject(job), m)).To(Succeed())
			m.Object["status"] = map[string]any{"jobStatus": "RUNNING", "readyTaskManagers": int64(3)}
			g.Expect(env.Members[placedOn].Status().Update(ctx, m)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			rb := binding(g)
			g.Expect(rb.Status.AggregatedStatus).To(HaveLen(1))
			it := rb.Status.AggregatedStatus[0]
			g.Expect(it.ClusterName).To(Equal(placedOn))
			g.Expect(it.Health).To(Equal(workv1alpha1.ResourceHealthy))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) map[string]any {
			t := &unstructured.Unstructured{}
			t.SetGroupVersionKind(gvk)
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(job), t)).To(Succeed())
			status, _, _ := unstructured.NestedMap(t.Object, "status")
			return status
		}).WithContext(ctx).Should(Equal(map[string]any{"jobStatus": "RUNNING", "readyTaskManagers": int64(3)}))

		By("taskmanagers no member has room for: scheduling fails, saying by how much")
		Eventually(func(g Gomega) {
			t := &unstructured.Unstructured{}
			t.SetGroupVersionKind(gvk)
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(job), t)).To(Succeed())
			g.Expect(unstructured.SetNestedField(t.Object, int64(1000000), "spec", "taskManager", "replicas")).To(Succeed())
			g.Expect(env.Host.Update(ctx, t)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			rb := binding(g)
			cond := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "%+v", cond)
			g.Expect(cond.Message).To(HavePrefix("0/3 clusters are available: "), "member3 is outside the affinity")
			// The member running the job must hold the added replicas; the other one the whole set.
			g.Expect(cond.Message).To(MatchRegexp(`cannot hold the replicas added to the components it runs \(jobmanager 0, taskmanager 999997\): ` +
				`cpu short by \S+ \(set needs 199999400m, \S+ free\), pods short by \S+ \(set needs 999997, \S+ free\)`))
			g.Expect(cond.Message).To(MatchRegexp(`cannot hold one set of the components \(jobmanager 1, taskmanager 1000000\): ` +
				`cpu short by \S+ \(set needs 200000100m, \S+ free\), pods short by \S+ \(set needs 1000001, \S+ free\)`))
			g.Expect(rb.Spec.Clusters).To(HaveLen(1), "the running job stays where it is")
			g.Expect(rb.Spec.Clusters[0].Name).To(Equal(placedOn))
		}).WithContext(ctx).Should(Succeed())
	})
})
