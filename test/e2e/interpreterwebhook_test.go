package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
	"github.com/flotilla-io/flotilla/internal/testing/interpreterhook"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// workloadWebhook interprets Karmada's example Workload kind: replicas in spec.replicas,
// revised by a JSON patch, healthy once status.readyReplicas reaches them.
func workloadWebhook(req *configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
		return &configv1alpha1.ResourceInterpreterResponse{Status: &configv1alpha1.RequestStatus{Code: 400, Message: err.Error()}}
	}
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
	ok := &configv1alpha1.ResourceInterpreterResponse{Successful: true}
	switch req.Operation {
	case configv1alpha1.InterpreterOperationInterpretReplica:
		ok.Replicas = ptr.To(int32(replicas))
	case configv1alpha1.InterpreterOperationReviseReplica:
		ok.Patch, ok.PatchType = interpreterhook.JSONPatch(map[string]any{"op": "replace", "path": "/spec/replicas", "value": *req.DesiredReplicas})
	case configv1alpha1.InterpreterOperationInterpretHealth:
		ok.Healthy = ptr.To(ready >= replicas)
	default:
		return nil
	}
	return ok
}

var _ = Describe("ResourceInterpreterWebhookConfiguration", func() {
	It("divides a custom kind's replicas and judges its health by a webhook over HTTPS; a webhook that times out fails the template, naming it", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-riwc")
		crd := fleettest.CRD("webhook.flotilla.io", "Workload")
		gvk := fleettest.CRDKind(crd)
		Expect(env.Host.Create(ctx, fleettest.AsUnstructured(crd))).To(Succeed())
		crdPolicy := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "e2e-riwc-crd"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}}},
			}}
		Expect(env.Host.Create(ctx, crdPolicy)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, fleettest.AsUnstructured(crd))
			_ = env.Host.Delete(ctx, crdPolicy)
		})

		srv, err := interpreterhook.Start(workloadWebhook)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		cfg := &configv1alpha1.ResourceInterpreterWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "e2e-workloads"},
			Webhooks: []configv1alpha1.ResourceInterpreterWebhook{{
				Name:         "workloads.webhook.flotilla.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/interpreter-workload"), CABundle: srv.CABundle},
				Rules: []configv1alpha1.RuleWithOperations{{
					Operations: []configv1alpha1.InterpreterOperation{"InterpretReplica", "ReviseReplica", "InterpretHealth"},
					Rule:       configv1alpha1.Rule{APIGroups: []string{gvk.Group}, APIVersions: []string{"*"}, Kinds: []string{gvk.Kind}},
				}},
				InterpreterContextVersions: []string{"v1alpha1"},
				TimeoutSeconds:             ptr.To[int32](1),
			}}}
		Expect(env.Host.Create(ctx, cfg)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = env.Host.Delete(ctx, cfg) })

		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(cfg), cfg)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cfg.Status.Conditions, configv1alpha1.ConditionLoaded)).To(BeTrue(), "%+v", cfg.Status)
			for _, m := range []string{"member1", "member2"} {
				c := &clusterv1alpha1.Cluster{}
				g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: m}, c)).To(Succeed())
				served := false
				for _, e := range c.Status.APIEnablements {
					for _, r := range e.Resources {
						served = served || (e.GroupVersion == gvk.GroupVersion().String() && r.Kind == gvk.Kind)
					}
				}
				g.Expect(served).To(BeTrue(), "%s serves %s", m, gvk.Kind)
			}
		}).WithContext(ctx).Should(Succeed())

		w := fleettest.CustomResource(crd, ns, "nginx", map[string]any{"replicas": int64(6)})
		Eventually(func() error { return env.Host.Create(ctx, w.DeepCopy()) }).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nginx"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: "nginx"}},
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
		rbKey := client.ObjectKey{Namespace: ns, Name: "nginx-workload"}
		memberReplicas := func(g Gomega, m string) int64 {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			g.Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(w), u)).To(Succeed())
			n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			return n
		}

		By("the webhook's replicas are divided by weight, and its patch gives each member its share: 6 → 4 + 2")
		start := time.Now()
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, rbKey, rb)).To(Succeed())
			g.Expect(rb.Spec.Replicas).To(BeEquivalentTo(6), "binding %+v", rb.Spec)
			g.Expect(memberReplicas(g, "member1")).To(BeEquivalentTo(4), "clusters %+v", rb.Spec.Clusters)
			g.Expect(memberReplicas(g, "member2")).To(BeEquivalentTo(2))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("webhook-interpreted Workload divided and applied in %s\n", time.Since(start).Round(time.Millisecond))

		By("the webhook judges each member's object: member1 ready, member2 not")
		for m, ready := range map[string]int64{"member1": 4, "member2": 1} {
			Eventually(func(g Gomega) {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(gvk)
				g.Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(w), u)).To(Succeed())
				u.Object["status"] = map[string]any{"readyReplicas": ready}
				g.Expect(env.Members[m].Status().Update(ctx, u)).To(Succeed())
			}).WithContext(ctx).Should(Succeed())
		}
		Eventually(func(g Gomega) map[string]workv1alpha1.ResourceHealth {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, rbKey, rb)).To(Succeed())
			out := map[string]workv1alpha1.ResourceHealth{}
			for _, it := range rb.Status.AggregatedStatus {
				out[it.ClusterName] = it.Health
			}
			return out
		}).WithContext(ctx).Should(Equal(map[string]workv1alpha1.ResourceHealth{"member1": workv1alpha1.ResourceHealthy, "member2": workv1alpha1.ResourceUnhealthy}))
		Expect(srv.CallsOf(configv1alpha1.InterpreterOperationInterpretHealth)).To(BeNumerically(">=", 2))

		By("a webhook that does not answer within timeoutSeconds fails the template's interpretation, and says which webhook")
		srv.Hold()
		Eventually(func(g Gomega) {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(gvk)
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
			g.Expect(unstructured.SetNestedField(cur.Object, int64(9), "spec", "replicas")).To(Succeed())
			g.Expect(env.Host.Update(ctx, cur)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, rbKey, rb)).To(Succeed())
			c := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionInterpreted)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(And(ContainSubstring(`interpreter webhook "workloads.webhook.flotilla.io"`), ContainSubstring("no answer within 1s")))
			g.Expect(rb.Spec.Replicas).To(BeEquivalentTo(6), "the binding keeps its last good spec")
			evs := framework.EventsFor(ctx, g, env.Host, ns, gvk.Kind, "nginx")
			g.Expect(evs).To(ContainElement(And(HaveField("Reason", wellknown.EventReasonApplyPolicyFailed), HaveField("Note", ContainSubstring("workloads.webhook.flotilla.io")))))
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(cfg), cfg)).To(Succeed())
			g.Expect(meta.IsStatusConditionFalse(cfg.Status.Conditions, configv1alpha1.ConditionWebhooksHealthy)).To(BeTrue(), "%+v", cfg.Status)
		}).WithContext(ctx).Should(Succeed())

		By("once it answers again, the edit goes through: 9 → 6 + 3")
		srv.Release()
		Eventually(func(g Gomega) {
			g.Expect(memberReplicas(g, "member1")).To(BeEquivalentTo(6))
			g.Expect(memberReplicas(g, "member2")).To(BeEquivalentTo(3))
		}).WithContext(ctx).Should(Succeed())
	})
})
