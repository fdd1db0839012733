package customization_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/interpreterhook"
)

var workloadKind = schema.GroupVersionKind{Group: "workload.example.io", Version: "v1alpha1", Kind: "Workload"}

// workloadHook answers Karmada's example Workload: replicas from spec.replicas, healthy when
// status.readyReplicas reaches them.
func workloadHook(req *configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
		return &configv1alpha1.ResourceInterpreterResponse{Status: &configv1alpha1.RequestStatus{Code: 400, Message: err.Error()}}
	}
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
	switch req.Operation {
	case configv1alpha1.InterpreterOperationInterpretReplica:
		return &configv1alpha1.ResourceInterpreterResponse{Successful: true, Replicas: ptr.To(int32(replicas))}
	case configv1alpha1.InterpreterOperationInterpretHealth:
		return &configv1alpha1.ResourceInterpreterResponse{Successful: true, Healthy: ptr.To(ready >= replicas)}
	}
	return nil
}

func webhookConfig(name, url string, ca []byte, timeout int32) *configv1alpha1.ResourceInterpreterWebhookConfiguration {
	return &configv1alpha1.ResourceInterpreterWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []configv1alpha1.ResourceInterpreterWebhook{{
			Name:         "workloads.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + "/interpreter-workload"), CABundle: ca},
			Rules: []configv1alpha1.RuleWithOperations{{
				Operations: []configv1alpha1.InterpreterOperation{"InterpretReplica", "InterpretHealth"},
				Rule:       configv1alpha1.Rule{APIGroups: []string{"workload.example.io"}, APIVersions: []string{"v1alpha1"}, Kinds: []string{"Workload"}},
			}},
			InterpreterContextVersions: []string{"v1alpha1"},
			TimeoutSeconds:             ptr.To(timeout),
		}}}
}

func webhookCondition(ctx context.Context, g Gomega, name, t string) *metav1.Condition {
	cur := &configv1alpha1.ResourceInterpreterWebhookConfiguration{}
	g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: name}, cur)).To(Succeed())
	c := meta.FindStatusCondition(cur.Status.Conditions, t)
	g.Expect(c).NotTo(BeNil(), t)
	g.Expect(c.ObservedGeneration).To(Equal(cur.Generation))
	return c
}

func aWorkload(replicas, ready int64) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": replicas}, "status": map[string]any{"readyReplicas": ready}}}
	obj.SetGroupVersionKind(workloadKind)
	obj.SetNamespace("shop")
	obj.SetName("nginx")
	return obj
}

var _ = Describe("ResourceInterpreterWebhookConfigurations", func() {
	var srv *interpreterhook.Server
	var interp interpreter.Interpreter
	BeforeEach(func() {
		var err error
		srv, err = interpreterhook.Start(workloadHook)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		interp = interpreter.Interpreter{Customizations: interpreter.Layers{st.Declared(), hooks, st.Builtins()}}
	})

	It("interprets a custom kind's replicas and health over HTTPS, after a customization's scripts, and stops when deleted", func(ctx SpecContext) {
		cfg := webhookConfig("examples", srv.URL, srv.CABundle, 3)
		Expect(env.Host.Create(ctx, cfg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(webhookCondition(ctx, g, "examples", configv1alpha1.ConditionLoaded).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(webhookCondition(ctx, g, "examples", configv1alpha1.ConditionWebhooksHealthy).Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())
		var m func(schema.GroupKind) bool
		Eventually(webhookChanges).Should(Receive(&m))
		Expect(m(workloadKind.GroupKind())).To(BeTrue())
		Expect(m(schema.GroupKind{Group: "apps", Kind: "Deployment"})).To(BeFalse())
		Expect(env.EventReasons(ctx, Default, cfg)).To(ContainElement(wellknown.EventReasonInterpreterWebhookLoaded))

		n, _, err := interp.GetReplicas(aWorkload(5, 0))
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeEquivalentTo(5))
		Expect(interp.Health(aWorkload(5, 5))).To(BeEquivalentTo("Healthy"))
		Expect(interp.Health(aWorkload(5, 2))).To(BeEquivalentTo("Unhealthy"))
		Expect(srv.CallsOf(configv1alpha1.InterpreterOperationInterpretHealth)).To(BeEquivalentTo(2))

		By("a ResourceInterpreterCustomization of the kind wins for the operations it scripts")
		r := ric("workloads", `function InterpretHealth(obj) return true end`)
		r.Spec.Target = configv1alpha1.CustomizationTarget{APIVersion: "workload.example.io/v1alpha1", Kind: "Workload"}
		Expect(env.Host.Create(ctx, r)).To(Succeed())
		Eventually(func() any { return interp.Health(aWorkload(5, 2)) }).WithContext(ctx).Should(BeEquivalentTo("Healthy"))
		n, _, err = interp.GetReplicas(aWorkload(4, 0))
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeEquivalentTo(4), "the webhook still serves replicas")
		Expect(env.Host.Delete(ctx, r)).To(Succeed())

		By("deleting the configuration takes the webhook out of use")
		Expect(env.Host.Delete(ctx, cfg)).To(Succeed())
		Eventually(func() bool { return interp.Customized(workloadKind, interpreter.OperationGetReplicas) }).WithContext(ctx).Should(BeFalse())
	})

	It("fails the operation when the webhook does not answer in time, and says which webhook on the configuration", func(ctx SpecContext) {
		cfg := webhookConfig("slow", srv.URL, srv.CABundle, 1)
		Expect(env.Host.Create(ctx, cfg)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, cfg))).To(Succeed()) })
		Eventually(func(g Gomega) {
			g.Expect(webhookCondition(ctx, g, "slow", configv1alpha1.ConditionLoaded).Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())
		srv.Hold()
		_, _, err := interp.GetReplicas(aWorkload(5, 0))
		srv.Release()
		Expect(err).To(MatchError(And(ContainSubstring(`interpreter webhook "workloads.example.com" (ResourceInterpreterWebhookConfiguration "slow")`),
			ContainSubstring("InterpretReplica of workload.example.io/v1alpha1/Workload shop/nginx"), ContainSubstring("no answer within 1s"))))
		Expect(interp.Health(aWorkload(5, 5))).To(BeEquivalentTo("Healthy"), "it answers again once released")
		Eventually(func(g Gomega) {
			c := webhookCondition(ctx, g, "slow", configv1alpha1.ConditionWebhooksHealthy)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal("CallFailed"))
			g.Expect(c.Message).To(And(ContainSubstring("workloads.example.com"), ContainSubstring("no answer within 1s")))
			g.Expect(env.EventReasons(ctx, g, cfg)).To(ContainElement(wellknown.EventReasonInterpreterWebhookCallFailed))
		}).WithContext(ctx).Should(Succeed())
	})

	It("keeps a configuration whose CA bundle is not PEM out of use and says why", func(ctx SpecContext) {
		cfg := webhookConfig("bad-ca", srv.URL, []byte("not a certificate"), 3)
		Expect(env.Host.Create(ctx, cfg)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, cfg))).To(Succeed()) })
		Eventually(func(g Gomega) {
			c := webhookCondition(ctx, g, "bad-ca", configv1alpha1.ConditionLoaded)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring(`webhook "workloads.example.com": clientConfig.caBundle holds no PEM certificate`))
			g.Expect(env.EventReasons(ctx, g, cfg)).To(ContainElement(wellknown.EventReasonInterpreterWebhookLoadFailed))
		}).WithContext(ctx).Should(Succeed())
		Expect(interp.Customized(workloadKind, interpreter.OperationGetReplicas)).To(BeFalse())
	})
})
