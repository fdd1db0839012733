package customization_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

var widget = schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}

func ric(name, health string) *configv1alpha1.ResourceInterpreterCustomization {
	return &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target:         configv1alpha1.CustomizationTarget{APIVersion: "example.io/v1", Kind: "Widget"},
			Customizations: configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.HealthInterpretation{LuaScript: health}},
		}}
}

func condition(ctx context.Context, g Gomega, name, t string) *metav1.Condition {
	cur := &configv1alpha1.ResourceInterpreterCustomization{}
	g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: name}, cur)).To(Succeed())
	c := meta.FindStatusCondition(cur.Status.Conditions, t)
	g.Expect(c).NotTo(BeNil(), t)
	g.Expect(c.ObservedGeneration).To(Equal(cur.Generation))
	return c
}

func healthOf(status string) workHealth {
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"state": status}}}
	obj.SetGroupVersionKind(widget)
	obj.SetNamespace("ns")
	obj.SetName("w")
	return workHealth(interpreter.Interpreter{Customizations: st}.Health(obj))
}

type workHealth string

var _ = Describe("ResourceInterpreterCustomizations", func() {
	It("puts a customization in use, reports Loaded, takes an edit, and takes it out of use when deleted", func(ctx SpecContext) {
		r := ric("widgets", `function InterpretHealth(obj) return obj.status.state == "up" end`)
		Expect(env.Host.Create(ctx, r)).To(Succeed())
		Eventually(func(g Gomega) {
			c := condition(ctx, g, "widgets", configv1alpha1.ConditionLoaded)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(condition(ctx, g, "widgets", configv1alpha1.ConditionScriptsHealthy).Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())
		Eventually(changes).Should(Receive(Equal(widget.GroupKind())))
		Expect(healthOf("up")).To(BeEquivalentTo("Healthy"))
		Expect(healthOf("down")).To(BeEquivalentTo("Unhealthy"))
		Expect(env.EventReasons(ctx, Default, r)).To(ContainElement(wellknown.EventReasonCustomizationLoaded))

		By("an edit applies at once")
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(r), r)).To(Succeed())
		r.Spec.Customizations.HealthInterpretation.LuaScript = `function InterpretHealth(obj) return obj.status.state == "down" end`
		Expect(env.Host.Update(ctx, r)).To(Succeed())
		Eventually(func() workHealth { return healthOf("down") }).WithContext(ctx).Should(BeEquivalentTo("Healthy"))

		By("deleting it brings the built-in rules back")
		Expect(env.Host.Delete(ctx, r)).To(Succeed())
		Eventually(func() bool { _, ok := st.Lookup(widget); return ok }).WithContext(ctx).Should(BeFalse())
	})

	It("reports a script that does not compile, with its line, and keeps it out of use until fixed", func(ctx SpecContext) {
		r := ric("broken", "function InterpretHealth(obj)\n  return obj.status.state ==\nend")
		Expect(env.Host.Create(ctx, r)).To(Succeed())
		Eventually(func(g Gomega) {
			c := condition(ctx, g, "broken", configv1alpha1.ConditionLoaded)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal("LoadFailed"))
			g.Expect(c.Message).To(And(ContainSubstring("healthInterpretation"), ContainSubstring("line 3")))
			g.Expect(env.EventReasons(ctx, g, r)).To(ContainElement(wellknown.EventReasonCustomizationLoadFailed))
		}).WithContext(ctx).Should(Succeed())
		_, inUse := st.Lookup(widget)
		Expect(inUse).To(BeFalse())

		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(r), r)).To(Succeed())
		r.Spec.Customizations.HealthInterpretation.LuaScript = `function InterpretHealth(obj) return true end`
		Expect(env.Host.Update(ctx, r)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(condition(ctx, g, "broken", configv1alpha1.ConditionLoaded).Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Delete(ctx, r)).To(Succeed())
	})

	It("marks ScriptsHealthy False with the failing object when a script fails at run time, until the next edit", func(ctx SpecContext) {
		r := ric("failing", `function InterpretHealth(obj) error("cannot judge " .. obj.metadata.name) end`)
		Expect(env.Host.Create(ctx, r)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(condition(ctx, g, "failing", configv1alpha1.ConditionLoaded).Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())
		Expect(healthOf("up")).To(BeEquivalentTo("Unknown"), "a failing script makes health Unknown, never a crash")
		Eventually(func(g Gomega) {
			c := condition(ctx, g, "failing", configv1alpha1.ConditionScriptsHealthy)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(And(ContainSubstring("healthInterpretation"), ContainSubstring("ns/w"), ContainSubstring("cannot judge w")))
			g.Expect(env.EventReasons(ctx, g, r)).To(ContainElement(wellknown.EventReasonCustomizationScriptFailed))
		}).WithContext(ctx).Should(Succeed())

		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(r), r)).To(Succeed())
		r.Spec.Customizations.HealthInterpretation.LuaScript = `function InterpretHealth(obj) return true end`
		Expect(env.Host.Update(ctx, r)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(condition(ctx, g, "failing", configv1alpha1.ConditionScriptsHealthy).Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Delete(ctx, r)).To(Succeed())
	})
})
