package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
)

// Measurements of progressive rollouts, outside `make test` (`make rollout-timing` sets
// FLOTILLA_ROLLOUT_TIMING=1): the time of each stage of a three-stage rollout with a soak,
// and a Deployment of 12 replicas over the 3 members rolled out with a fleet-wide
// maxUnavailable of 2, the members' unavailable replicas summed every second (the same
// rollout without the budget is sampled too, for comparison).
var _ = Describe("Rollout timing", Ordered, func() {
	const ns = "rollout-timing"
	members := []string{"member1", "member2", "member3"}

	BeforeAll(func(ctx context.Context) {
		if os.Getenv("FLOTILLA_ROLLOUT_TIMING") == "" {
			Skip("measurements: make rollout-timing")
		}
		templateNamespace(ctx, ns)
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	})

	deployment := func(name string, replicas int32, minReady int32) *appsv1.Deployment {
		labels := map[string]string{"app": name}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(replicas), MinReadySeconds: minReady,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
				},
			},
		}
	}
	propagate := func(ctx context.Context, name string, divided bool) {
		p := policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members}}
		if divided {
			var w []policyv1alpha1.StaticClusterWeight
			for _, m := range members {
				w = append(w, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}, Weight: 1})
			}
			p.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: w}}
		}
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Placement:         p,
			},
		})).To(Succeed())
	}
	rolloutOf := func(ctx context.Context, g Gomega, name string) *rolloutsv1alpha1.Rollout {
		ro := &rolloutsv1alpha1.Rollout{}
		g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-deployment"}, ro)).To(Succeed())
		return ro
	}
	ready := func(ctx context.Context, name, image string, perMember int32) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			for _, m := range members {
				d := &appsv1.Deployment{}
				g.Expect(env.Members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
				g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(image), m)
				g.Expect(d.Status.AvailableReplicas).To(Equal(perMember), m)
				g.Expect(d.Status.UpdatedReplicas).To(Equal(perMember), m)
				g.Expect(d.Status.Replicas).To(Equal(perMember), m)
				g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation), m)
			}
		}).WithContext(ctx).WithTimeout(5 * time.Minute).Should(Succeed())
	}
	setImage := func(ctx context.Context, name, image string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
			d.Spec.Template.Spec.Containers[0].Image = image
			g.Expect(env.Host.Update(ctx, d)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
	}

	It("times each stage of a three-stage rollout with a 5 s soak", func(ctx context.Context) {
		const name = "staged"
		propagate(ctx, name, false)
		Expect(env.Host.Create(ctx, &rolloutsv1alpha1.RolloutPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: rolloutsv1alpha1.RolloutPolicySpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Stages: []rolloutsv1alpha1.Stage{
					{Name: "one", Clusters: &rolloutsv1alpha1.StageClusters{Names: []string{"member1"}}, Soak: &metav1.Duration{Duration: 5 * time.Second}},
					{Name: "two", Clusters: &rolloutsv1alpha1.StageClusters{Names: []string{"member2"}}, Soak: &metav1.Duration{Duration: 5 * time.Second}},
					{Name: "three", Soak: &metav1.Duration{Duration: 5 * time.Second}},
				},
			},
		})).To(Succeed())
		Expect(env.Host.Create(ctx, deployment(name, 3, 0))).To(Succeed())
		ready(ctx, name, "registry.example/app:1", 3)
		Eventually(func(g Gomega) {
			g.Expect(rolloutOf(ctx, g, name).Status.Phase).To(Equal(rolloutsv1alpha1.PhaseComplete))
		}).WithContext(ctx).Should(Succeed())
		start := time.Now()
		setImage(ctx, name, "registry.example/app:2")
		var ro *rolloutsv1alpha1.Rollout
		Eventually(func(g Gomega) {
			ro = rolloutOf(ctx, g, name)
			g.Expect(ro.Status.StableRevision).To(Equal(ro.Status.Revision))
			g.Expect(ro.Status.Stages).To(HaveLen(3))
		}).WithContext(ctx).WithTimeout(5 * time.Minute).Should(Succeed())
		total := time.Since(start)
		for _, s := range ro.Status.Stages {
			Expect(s.StartedAt).NotTo(BeNil())
			Expect(s.CompletedAt).NotTo(BeNil())
			AddReportEntry("stage "+s.Name, fmt.Sprintf("%s (soak 5s included), started %s after the edit",
				s.CompletedAt.Sub(s.StartedAt.Time), s.StartedAt.Sub(start).Round(time.Second)))
			fmt.Fprintf(GinkgoWriter, "TIMING stage %s: %s (soak 5s), started %s after the edit\n", s.Name,
				s.CompletedAt.Sub(s.StartedAt.Time), s.StartedAt.Sub(start).Round(time.Second))
		}
		fmt.Fprintf(GinkgoWriter, "TIMING edit to revision stable on 3 members: %s\n", total.Round(100*time.Millisecond))
	})

	// sample sums the members' unavailable replicas (spec.replicas - status.availableReplicas,
	// as each member's Deployment reports it) every second until stop is closed.
	sample := func(ctx context.Context, name string, stop <-chan struct{}) func() (samples []int32) {
		var mu sync.Mutex
		var out []int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				var sum int32
				line := ""
				for _, m := range members {
					d := &appsv1.Deployment{}
					if err := env.Members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err == nil {
						u := max(0, ptr.Deref(d.Spec.Replicas, 1)-d.Status.AvailableReplicas)
						sum += u
						line += fmt.Sprintf(" %s:%d(%s)", m, u, d.Spec.Template.Spec.Containers[0].Image[len(d.Spec.Template.Spec.Containers[0].Image)-1:])
					}
				}
				ro := &rolloutsv1alpha1.Rollout{}
				if err := env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-deployment"}, ro); err == nil {
					for _, c := range ro.Status.Clusters {
						line += fmt.Sprintf(" [%s %s %s %s u%d m%d]", c.Name, c.Phase, c.Health, c.Target, c.Unavailable, ptr.Deref(c.MaxUnavailable, -1))
					}
				}
				fmt.Fprintf(GinkgoWriter, "SAMPLE %d:%s\n", sum, line)
				mu.Lock()
				out = append(out, sum)
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		return func() []int32 { <-done; mu.Lock(); defer mu.Unlock(); return out }
	}

	measure := func(ctx context.Context, name string, budget *intstr.IntOrString) []int32 {
		propagate(ctx, name, true)
		Expect(env.Host.Create(ctx, &rolloutsv1alpha1.RolloutPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: rolloutsv1alpha1.RolloutPolicySpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Stages:            []rolloutsv1alpha1.Stage{{Name: "all"}},
				MaxUnavailable:    budget,
			},
		})).To(Succeed())
		// minReadySeconds keeps each new pod unavailable for 3 s after it is Ready, so the
		// rolling updates last long enough to be sampled.
		Expect(env.Host.Create(ctx, deployment(name, 12, 3))).To(Succeed())
		ready(ctx, name, "registry.example/app:1", 4)
		Eventually(func(g Gomega) {
			g.Expect(rolloutOf(ctx, g, name).Status.Phase).To(Equal(rolloutsv1alpha1.PhaseComplete))
		}).WithContext(ctx).Should(Succeed())
		stop := make(chan struct{})
		samples := sample(ctx, name, stop)
		start := time.Now()
		setImage(ctx, name, "registry.example/app:2")
		ready(ctx, name, "registry.example/app:2", 4)
		took := time.Since(start)
		time.Sleep(2 * time.Second)
		close(stop)
		got := samples()
		fmt.Fprintf(GinkgoWriter, "TIMING %s (maxUnavailable %v): rolled out in %s; unavailable sampled every second: %v (max %d)\n",
			name, budget, took.Round(100*time.Millisecond), got, maxOf(got))
		return got
	}

	It("keeps a 12-replica Deployment over 3 members within a fleet-wide maxUnavailable of 2", func(ctx context.Context) {
		got := measure(ctx, "budget", ptr.To(intstr.FromInt32(2)))
		Expect(maxOf(got)).To(BeNumerically("<=", 2))
	})

	It("for comparison: the same rollout without a budget", func(ctx context.Context) {
		measure(ctx, "nobudget", nil)
	})
})

func maxOf(s []int32) int32 {
	var m int32
	for _, v := range s {
		m = max(m, v)
	}
	return m
}
