package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

var _ = Describe("CronFederatedHPA", func() {
	It("fires and sets the fleet's replicas on the binding, never the template; an edit of the template's replicas wins; deleting it leaves the template's", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-cronfhpa")
		Expect(env.Host.Create(ctx, deployment(ns, "nginx", 3, resourceQuantity("10m"), nil))).To(Succeed())
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nginx"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
						WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
							{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}, Weight: 1},
							{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}, Weight: 1},
						}},
					},
				},
			}})).To(Succeed())
		fleet := func(g Gomega) (binding int32, members int32, annotation string) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx-deployment"}, rb)).To(Succeed())
			for m, r := range env.DeploymentReplicas(ctx, ns, "nginx") {
				if m == "member1" || m == "member2" {
					g.Expect(r.Spec).To(BeNumerically(">=", 0), "%s has no nginx yet", m)
					members += r.Spec
				}
			}
			return rb.Spec.Replicas, members, rb.GetAnnotations()[wellknown.CronScaleAnnotation]
		}
		Eventually(func(g Gomega) {
			b, m, _ := fleet(g)
			g.Expect([]int32{b, m}).To(Equal([]int32{3, 3}))
		}).WithContext(ctx).Should(Succeed())

		By("Karmada's documented CronFederatedHPA, unchanged")
		cron := &autoscalingv1alpha1.CronFederatedHPA{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nginx-cronfhpa"},
			Spec: autoscalingv1alpha1.CronFederatedHPASpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"},
				Rules:          []autoscalingv1alpha1.CronFederatedHPARule{{Name: "scale-up", Schedule: "*/1 * * * *", TargetReplicas: ptr.To[int32](5), Suspend: ptr.To(false)}},
			}}
		Expect(env.Host.Create(ctx, cron)).To(Succeed())
		var next time.Time
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(cron), cron)).To(Succeed())
			g.Expect(cron.Status.ExecutionHistories).To(HaveLen(1))
			g.Expect(cron.Status.ExecutionHistories[0].NextExecutionTime).NotTo(BeNil())
			next = cron.Status.ExecutionHistories[0].NextExecutionTime.Time
		}).WithContext(ctx).Should(Succeed())

		By("a fire time passed while the manager was not looking (the recorded next execution a minute earlier) fires at once")
		start := time.Now()
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(cron), cron)).To(Succeed())
			if len(cron.Status.ExecutionHistories[0].SuccessfulExecutions) > 0 {
				return // the real minute came first
			}
			cron.Status.ExecutionHistories[0].NextExecutionTime = &metav1.Time{Time: next.Add(-time.Minute)}
			g.Expect(env.Host.Status().Update(ctx, cron)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			b, m, ann := fleet(g)
			g.Expect([]int32{b, m}).To(Equal([]int32{5, 5}), "binding and members")
			g.Expect(ann).To(ContainSubstring("CronFederatedHPA nginx-cronfhpa, rule scale-up"))
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(cron), cron)).To(Succeed())
			g.Expect(cron.Status.ExecutionHistories[0].SuccessfulExecutions).NotTo(BeEmpty())
			g.Expect(*cron.Status.FleetReplicas).To(BeEquivalentTo(5))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("fire to 5 replicas on the members: %s\n", time.Since(start).Round(time.Millisecond))
		tmpl := &appsv1.Deployment{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx"}, tmpl)).To(Succeed())
		Expect(*tmpl.Spec.Replicas).To(BeEquivalentTo(3), "the template is never written")

		By("the user edits the template's replicas: the edit wins until the next fire")
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nginx"}, tmpl)).To(Succeed())
			tmpl.Spec.Replicas = ptr.To[int32](4)
			g.Expect(env.Host.Update(ctx, tmpl)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			b, m, _ := fleet(g)
			if b == 5 {
				// The real minute may have fired again since, with the template at 4: it wins again.
				g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(cron), cron)).To(Succeed())
				g.Expect(*cron.Status.TemplateReplicas).To(BeEquivalentTo(4))
				return
			}
			g.Expect([]int32{b, m}).To(Equal([]int32{4, 4}))
		}).WithContext(ctx).Should(Succeed())

		By("deleting the CronFederatedHPA leaves the template's replicas")
		Expect(env.Host.Delete(ctx, cron)).To(Succeed())
		Eventually(func(g Gomega) {
			b, m, ann := fleet(g)
			g.Expect([]int32{b, m}).To(Equal([]int32{4, 4}))
			g.Expect(ann).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})
})
