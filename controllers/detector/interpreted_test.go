package detector_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var _ = Describe("A template whose customization fails", func() {
	It("leaves its binding with an Interpreted=False condition naming the customization, operation and line, until it is fixed", func(ctx SpecContext) {
		// A host of its own: the detector reads replicas through a customization of ConfigMaps
		// whose script fails for templates labelled fail=true.
		store := customization.NewStore(customization.Options{})
		Expect(store.Apply(&configv1alpha1.ResourceInterpreterCustomization{
			ObjectMeta: metav1.ObjectMeta{Name: "configmap-replicas"},
			Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
				Target: configv1alpha1.CustomizationTarget{APIVersion: "v1", Kind: "ConfigMap"},
				Customizations: configv1alpha1.CustomizationRules{ReplicaResource: &configv1alpha1.ReplicaResourceRequirement{
					LuaScript: "function GetReplicas(obj)\n  if obj.metadata.labels ~= nil and obj.metadata.labels.fail == \"true\" then\n    error(\"boom\")\n  end\n  return 1, nil\nend\n"}},
			},
		})).To(Succeed())
		own := fleettest.Start(ctx, fleettest.Options{Name: "detector-interpreted"})
		mgr := own.NewManager()
		r := &detector.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("detector"), Interpreter: interpreter.Interpreter{Customizations: store}}
		Expect(r.SetupWithManager(mgr, detector.Options{Workers: 2})).To(Succeed())
		fleettest.StartManager(mgr)

		const ns = "interp"
		own.TemplateNamespace(ctx, ns)
		Expect(own.Host.Create(ctx, policy(ns, "pp", selectConfigMap("cfg")))).To(Succeed())
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		Expect(own.Host.Create(ctx, cm)).To(Succeed())
		b := rb(ns, "ConfigMap", "cfg")
		Eventually(func(g Gomega) int32 {
			g.Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return b.Spec.Replicas
		}).WithContext(ctx).Should(Equal(int32(1)))
		Expect(meta.FindStatusCondition(b.Status.Conditions, wellknown.ConditionInterpreted)).To(BeNil(), "written only once something failed")

		By("the script failing for the template")
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Labels = map[string]string{"fail": "true"}
		Expect(own.Host.Patch(ctx, cm, patch)).To(Succeed())
		Eventually(func(g Gomega) *metav1.Condition {
			g.Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return meta.FindStatusCondition(b.Status.Conditions, wellknown.ConditionInterpreted)
		}).WithContext(ctx).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", wellknown.ReasonInterpreterFailed),
			HaveField("Message", And(ContainSubstring(`customization "configmap-replicas"`), ContainSubstring("GetReplicas"),
				ContainSubstring("line 3"), ContainSubstring("boom")))))
		Expect(b.Spec.Replicas).To(Equal(int32(1)), "the binding keeps its last good spec")

		By("the template fixed")
		patch = client.MergeFrom(cm.DeepCopy())
		cm.Labels = map[string]string{"fail": "false"}
		Expect(own.Host.Patch(ctx, cm, patch)).To(Succeed())
		Eventually(func(g Gomega) metav1.ConditionStatus {
			g.Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return meta.FindStatusCondition(b.Status.Conditions, wellknown.ConditionInterpreted).Status
		}).WithContext(ctx).Should(Equal(metav1.ConditionTrue))
	}, SpecTimeout(2*time.Minute))
})
