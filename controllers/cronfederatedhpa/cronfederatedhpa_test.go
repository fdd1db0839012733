package cronfederatedhpa_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

func namespace(ctx context.Context, name string) string {
	Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

func deployment(ctx context.Context, ns, name string, replicas int32) {
	labels := map[string]string{"app": name}
	Expect(env.Host.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}}})).To(Succeed())
}

func cron(ns, name string, target autoscalingv2.CrossVersionObjectReference, rules ...autoscalingv1alpha1.CronFederatedHPARule) *autoscalingv1alpha1.CronFederatedHPA {
	return &autoscalingv1alpha1.CronFederatedHPA{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv1alpha1.CronFederatedHPASpec{ScaleTargetRef: target, Rules: rules}}
}

func deploy(name string) autoscalingv2.CrossVersionObjectReference {
	return autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

func get(ctx context.Context, g Gomega, c *autoscalingv1alpha1.CronFederatedHPA) *autoscalingv1alpha1.CronFederatedHPA {
	cur := &autoscalingv1alpha1.CronFederatedHPA{}
	g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(c), cur)).To(Succeed())
	return cur
}

// touch makes the controller look at c again (as its requeue at the next fire time would).
func touch(ctx context.Context, c *autoscalingv1alpha1.CronFederatedHPA) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := get(ctx, g, c)
		ann := cur.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["test.flotilla.io/touch"] = time.Now().String()
		cur.SetAnnotations(ann)
		g.Expect(env.Host.Update(ctx, cur)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

var _ = Describe("CronFederatedHPA", func() {
	It("fires a rule at its schedule in its time zone, records the fleet replicas and the history, and keeps the newest within the limit", func(ctx SpecContext) {
		ns := namespace(ctx, "cron-fires")
		deployment(ctx, ns, "web", 3)
		clock.Set(time.Date(2026, 11, 28, 8, 0, 30, 0, time.UTC))
		up := autoscalingv1alpha1.CronFederatedHPARule{Name: "scale-up", Schedule: "*/1 * * * *", TargetReplicas: ptr.To[int32](5),
			SuccessfulHistoryLimit: ptr.To[int32](2)}
		// 09:30 in Shanghai is 01:30 UTC: not before tomorrow.
		morning := autoscalingv1alpha1.CronFederatedHPARule{Name: "morning", Schedule: "30 9 * * *", TimeZone: ptr.To("Asia/Shanghai"), TargetReplicas: ptr.To[int32](8)}
		c := cron(ns, "web", deploy("web"), up, morning)
		Expect(env.Host.Create(ctx, c)).To(Succeed())

		By("a new rule waits for its first fire time")
		Eventually(func(g Gomega) {
			cur := get(ctx, g, c)
			g.Expect(cur.Status.ExecutionHistories).To(HaveLen(2))
			g.Expect(cur.Status.ExecutionHistories[0].NextExecutionTime.Time).To(BeTemporally("==", time.Date(2026, 11, 28, 8, 1, 0, 0, time.UTC)))
			g.Expect(cur.Status.ExecutionHistories[1].NextExecutionTime.Time).To(BeTemporally("==", time.Date(2026, 11, 29, 1, 30, 0, 0, time.UTC)))
			g.Expect(cur.Status.ExecutionHistories[0].SuccessfulExecutions).To(BeEmpty())
			g.Expect(cur.Status.FleetReplicas).To(BeNil())
			ready := meta.FindStatusCondition(cur.Status.Conditions, autoscalingv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Message).To(Equal("Rule scale-up fires next, at 2026-11-28T08:01:00Z"))
		}).WithContext(ctx).Should(Succeed())

		By("the clock passes 08:01: the rule fires for 08:01 and the fleet replicas are 5 while the template asks for 3")
		for i, at := range []time.Time{time.Date(2026, 11, 28, 8, 1, 2, 0, time.UTC), time.Date(2026, 11, 28, 8, 2, 1, 0, time.UTC), time.Date(2026, 11, 28, 8, 3, 1, 0, time.UTC)} {
			clock.Set(at)
			touch(ctx, c)
			Eventually(func(g Gomega) {
				cur := get(ctx, g, c)
				h := cur.Status.ExecutionHistories[0]
				g.Expect(h.SuccessfulExecutions).To(HaveLen(min(i+1, 2)))
				g.Expect(h.SuccessfulExecutions[0].ScheduleTime.Time).To(BeTemporally("==", at.Truncate(time.Minute)))
				g.Expect(h.SuccessfulExecutions[0].ExecutionTime.Time).To(BeTemporally("==", at))
				g.Expect(*h.SuccessfulExecutions[0].AppliedReplicas).To(BeEquivalentTo(5))
				g.Expect(h.NextExecutionTime.Time).To(BeTemporally("==", at.Truncate(time.Minute).Add(time.Minute)))
				g.Expect(*cur.Status.FleetReplicas).To(BeEquivalentTo(5))
				g.Expect(*cur.Status.TemplateReplicas).To(BeEquivalentTo(3))
				g.Expect(cur.Status.LastRule).To(Equal("scale-up"))
				g.Expect(cur.Status.ExecutionHistories[1].SuccessfulExecutions).To(BeEmpty(), "morning has not fired")
			}).WithContext(ctx).Should(Succeed())
		}
		Expect(env.EventReasons(ctx, Default, c)).To(ContainElement(wellknown.EventReasonScaleSucceeded))

		By("suspending the rule clears its next execution time")
		Eventually(func(g Gomega) {
			cur := get(ctx, g, c)
			cur.Spec.Rules[0].Suspend = ptr.To(true)
			g.Expect(env.Host.Update(ctx, cur)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, g, c).Status.ExecutionHistories[0].NextExecutionTime).To(BeNil())
		}).WithContext(ctx).Should(Succeed())
	})

	It("records a failed execution when the target does not exist, with a ScaleFailed event", func(ctx SpecContext) {
		ns := namespace(ctx, "cron-missing")
		clock.Set(time.Date(2026, 11, 28, 9, 0, 30, 0, time.UTC))
		c := cron(ns, "ghost", deploy("ghost"), autoscalingv1alpha1.CronFederatedHPARule{Name: "up", Schedule: "@hourly", TargetReplicas: ptr.To[int32](2)})
		Expect(env.Host.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, g, c).Status.ExecutionHistories).To(HaveLen(1))
		}).WithContext(ctx).Should(Succeed())
		clock.Set(time.Date(2026, 11, 28, 10, 0, 5, 0, time.UTC))
		touch(ctx, c)
		Eventually(func(g Gomega) {
			cur := get(ctx, g, c)
			f := cur.Status.ExecutionHistories[0].FailedExecutions
			g.Expect(f).To(HaveLen(1))
			g.Expect(f[0].Message).To(Equal("the target Deployment cron-missing/ghost does not exist"))
			g.Expect(cur.Status.FleetReplicas).To(BeNil())
			g.Expect(env.EventReasons(ctx, g, c)).To(ContainElement(wellknown.EventReasonScaleFailed))
		}).WithContext(ctx).Should(Succeed())
	})

	It("accepts a FederatedHPA target and refuses a rule with an unknown time zone, saying which field", func(ctx SpecContext) {
		ns := namespace(ctx, "cron-refused")
		fhpa := cron(ns, "fhpa", autoscalingv2.CrossVersionObjectReference{APIVersion: "autoscaling.karmada.io/v1alpha1", Kind: "FederatedHPA", Name: "nginx-fhpa"},
			autoscalingv1alpha1.CronFederatedHPARule{Name: "up", Schedule: "*/1 * * * *", TargetMinReplicas: ptr.To[int32](5)})
		Expect(env.Host.Create(ctx, fhpa)).To(Succeed())
		badTZ := cron(ns, "tz", deploy("web"), autoscalingv1alpha1.CronFederatedHPARule{Name: "up", Schedule: "0 8 * * *", TimeZone: ptr.To("Mars/Olympus"), TargetReplicas: ptr.To[int32](2)})
		Expect(env.Host.Create(ctx, badTZ)).To(Succeed())
		Eventually(func(g Gomega) {
			ready := meta.FindStatusCondition(get(ctx, g, fhpa).Status.Conditions, autoscalingv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			// Its fired bounds are read by the FederatedHPA controller (internal/fhpa.EffectiveBounds).
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Reason).To(Equal("Scheduled"))

			ready = meta.FindStatusCondition(get(ctx, g, badTZ).Status.Conditions, autoscalingv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal("InvalidSchedule"))
			g.Expect(ready.Message).To(ContainSubstring(`spec.rules[0] (up): timeZone "Mars/Olympus" is not a time zone`))
		}).WithContext(ctx).Should(Succeed())
	})
})
