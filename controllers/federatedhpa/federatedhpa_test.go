package federatedhpa_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/fhpa"
)

// setup creates a Deployment template, its binding on two clusters with replicas, and a
// FederatedHPA at 50% CPU with no scale-down stabilization.
func setup(ctx context.Context, ns string, replicas int32) *autoscalingv1alpha1.FederatedHPA {
	Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	labels := map[string]string{"app": "web"}
	Expect(env.Host.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}}})).To(Succeed())
	Expect(env.Host.Create(ctx, &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-deployment"},
		Spec: workv1alpha2.ResourceBindingSpec{Replicas: replicas,
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"},
			Clusters: []workv1alpha2.TargetCluster{{Name: "m1", Replicas: replicas / 2}, {Name: "m2", Replicas: replicas - replicas/2}}}})).To(Succeed())
	h := &autoscalingv1alpha1.FederatedHPA{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: autoscalingv1alpha1.FederatedHPASpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}},
		}}
	Expect(env.Host.Create(ctx, h)).To(Succeed())
	return h
}

// pods returns n Ready pods of ns in cluster using useMilli of their 100m CPU request.
func pods(cluster, ns string, n int, useMilli int64) []fhpa.Pod {
	var out []fhpa.Pod
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%s-%d", cluster, i), Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: time.Now().Add(-time.Hour)},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: time.Now().Add(-time.Hour)}}}}}
		m := &metricsv1beta1.PodMetrics{ObjectMeta: p.ObjectMeta, Timestamp: metav1.Now(), Window: metav1.Duration{Duration: 15 * time.Second},
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(useMilli, resource.DecimalSI)}}}}
		out = append(out, fhpa.Pod{Cluster: cluster, Pod: p, Metrics: m})
	}
	return out
}

func status(ctx context.Context, g Gomega, h *autoscalingv1alpha1.FederatedHPA) autoscalingv2.HorizontalPodAutoscalerStatus {
	cur := &autoscalingv1alpha1.FederatedHPA{}
	g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(h), cur)).To(Succeed())
	return cur.Status
}

func condition(s autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

// setBinding sets the binding's replicas, as the detector does from desiredReplicas.
func setBinding(ctx context.Context, ns string, replicas int32) {
	rb := &workv1alpha2.ResourceBinding{}
	Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-deployment"}, rb)).To(Succeed())
	rb.Spec.Replicas = replicas
	Expect(env.Host.Update(ctx, rb)).To(Succeed())
}

var _ = Describe("FederatedHPA", func() {
	It("scales from the metrics summed across members, and holds when a member's metrics are down", func(ctx SpecContext) {
		ns := "fhpa-scale"
		collector.set("m1", pods("m1", ns, 1, 100), nil)
		collector.set("m2", pods("m2", ns, 1, 100), nil)
		h := setup(ctx, ns, 2)

		By("2 pods at 100% of a 50% target ask for 4 replicas")
		Eventually(func(g Gomega) {
			s := status(ctx, g, h)
			g.Expect(s.DesiredReplicas).To(Equal(int32(4)))
			g.Expect(s.CurrentReplicas).To(Equal(int32(2)))
			g.Expect(s.LastScaleTime).NotTo(BeNil())
			g.Expect(condition(s, autoscalingv2.ScalingActive).Reason).To(Equal("ValidMetricFound"))
			g.Expect(*s.CurrentMetrics[0].Resource.Current.AverageUtilization).To(Equal(int32(100)))
		}).Should(Succeed())
		setBinding(ctx, ns, 4)

		By("a member whose metrics API is down: the replicas stay, ScalingActive=False names it")
		collector.set("m1", pods("m1", ns, 2, 1), nil)
		collector.set("m2", nil, errDown)
		Eventually(func(g Gomega) {
			s := status(ctx, g, h)
			c := condition(s, autoscalingv2.ScalingActive)
			g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("cluster m2: the server is currently unable"))
			g.Expect(s.DesiredReplicas).To(Equal(int32(4)))
			g.Expect(s.CurrentReplicas).To(Equal(int32(4)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(status(ctx, g, h).DesiredReplicas).To(Equal(int32(4)))
		}, "1s").Should(Succeed())

		By("back, and idle: down to the minimum")
		collector.set("m2", pods("m2", ns, 2, 1), nil)
		Eventually(func(g Gomega) {
			s := status(ctx, g, h)
			g.Expect(s.DesiredReplicas).To(Equal(int32(1)))
			g.Expect(condition(s, autoscalingv2.ScalingActive).Status).To(Equal(corev1.ConditionTrue))
		}).Should(Succeed())
	})

	It("takes the bounds a CronFederatedHPA targeting it last set, from its status, never writing its own spec", func(ctx SpecContext) {
		ns := "fhpa-cronbounds"
		// At the target until the CronFederatedHPA has fired: nothing to scale.
		collector.set("m1", pods("m1", ns, 1, 50), nil)
		collector.set("m2", pods("m2", ns, 1, 50), nil)
		h := setup(ctx, ns, 2)
		c := &autoscalingv1alpha1.CronFederatedHPA{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cap"},
			Spec: autoscalingv1alpha1.CronFederatedHPASpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "autoscaling.karmada.io/v1alpha1", Kind: "FederatedHPA", Name: "web"},
				Rules:          []autoscalingv1alpha1.CronFederatedHPARule{{Name: "cap", Schedule: "0 8 * * *", TargetMaxReplicas: ptr.To[int32](3)}}}}
		Expect(env.Host.Create(ctx, c)).To(Succeed())
		// As the CronFederatedHPA controller records an execution (it does not run here).
		ts := metav1.Now()
		c.Status.ExecutionHistories = []autoscalingv1alpha1.ExecutionHistory{{RuleName: "cap",
			SuccessfulExecutions: []autoscalingv1alpha1.SuccessfulExecution{{ScheduleTime: &ts, ExecutionTime: &ts, AppliedMaxReplicas: ptr.To[int32](3)}}}}
		Expect(env.Host.Status().Update(ctx, c)).To(Succeed())
		collector.set("m1", pods("m1", ns, 1, 100), nil)
		collector.set("m2", pods("m2", ns, 1, 100), nil)
		Eventually(func(g Gomega) {
			s := status(ctx, g, h)
			g.Expect(s.DesiredReplicas).To(Equal(int32(3)), "4 asked, capped at the fired maxReplicas")
			g.Expect(condition(s, autoscalingv2.ScalingActive).Message).To(ContainSubstring("maxReplicas 3 from CronFederatedHPA cap rule cap"))
			g.Expect(condition(s, autoscalingv2.ScalingLimited).Reason).To(Equal("TooManyReplicas"))
		}).Should(Succeed())
		cur := &autoscalingv1alpha1.FederatedHPA{}
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(h), cur)).To(Succeed())
		Expect(cur.Spec.MaxReplicas).To(BeEquivalentTo(10), "the FederatedHPA's spec is never written")
	})

	It("reports a target it cannot read", func(ctx SpecContext) {
		ns := "fhpa-notarget"
		Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		h := &autoscalingv1alpha1.FederatedHPA{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: autoscalingv1alpha1.FederatedHPASpec{MaxReplicas: 3,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "absent"}}}
		Expect(env.Host.Create(ctx, h)).To(Succeed())
		Eventually(func(g Gomega) {
			c := condition(status(ctx, g, h), autoscalingv2.AbleToScale)
			g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("the target Deployment fhpa-notarget/absent does not exist"))
		}).Should(Succeed())
	})
})
