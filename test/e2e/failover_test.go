package e2e

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/controllers/failover"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// dividedOver is a policy that divides Deployments 1:1 over clusters, tolerating the system
// NoExecute taints for tolerate seconds.
func dividedOver(ns, name string, tolerate int64, clusters ...string) *policyv1alpha1.PropagationPolicy {
	var weights []policyv1alpha1.StaticClusterWeight
	for _, c := range clusters {
		weights = append(weights, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{c}}, Weight: 1})
	}
	var tolerations []corev1.Toleration
	for _, key := range []string{wellknown.TaintClusterNotReady, wellknown.TaintClusterUnreachable} {
		tolerations = append(tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(tolerate)})
	}
	return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:    &policyv1alpha1.ClusterAffinity{ClusterNames: clusters},
				ClusterTolerations: tolerations,
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: weights}},
			},
			Failover: &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully}},
		}}
}

// readyIn is the Deployment's ready replicas in a member (0 when it is not there or the
// member does not answer).
func readyIn(ctx context.Context, member string, dep client.Object) int32 {
	d := &appsv1.Deployment{}
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := env.Members[member].Get(c, client.ObjectKeyFromObject(dep), d); err != nil {
		return 0
	}
	return d.Status.ReadyReplicas
}

func bindingOf(ctx context.Context, g Gomega, ns, name string) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{}
	g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: detector.BindingName("Deployment", name)}, rb)).To(Succeed())
	return rb
}

func targetReplicas(rb *workv1alpha2.ResourceBinding) map[string]int32 {
	out := map[string]int32{}
	for _, tc := range rb.Spec.Clusters {
		out[tc.Name] = tc.Replicas
	}
	return out
}

var _ = Describe("Cluster failover", Ordered, func() {
	const ns = "e2e-failover"
	dep := deploymentTemplate(ns, "web", 6)
	even := map[string]int32{"member1": 2, "member2": 2, "member3": 2}

	BeforeAll(func(ctx context.Context) {
		templateNamespace(ctx, ns)
		Expect(env.Host.Create(ctx, dividedOver(ns, "web", 10, "member1", "member2", "member3"))).To(Succeed())
		Expect(env.Host.Create(ctx, dep.DeepCopy())).To(Succeed())
		Eventually(func() int32 {
			return readyIn(ctx, "member1", dep) + readyIn(ctx, "member2", dep) + readyIn(ctx, "member3", dep)
		}).WithContext(ctx).Should(Equal(int32(6)))
	})

	It("moves nothing for a member down 5 s, inside its 10 s toleration", func(ctx context.Context) {
		m2 := env.Fleet.Member("member2")
		down := time.Now()
		Expect(m2.KillAPIServer()).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = m2.StartAPIServer(ctx) })
		// The outage is noticed: member2 gets a NoExecute taint, whose TimeAdded starts the
		// 10 s toleration (internal/failover).
		var tainted time.Time
		Eventually(func(g Gomega) {
			c := &clusterv1alpha1.Cluster{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: "member2"}, c)).To(Succeed())
			for _, t := range c.Spec.Taints {
				if t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded != nil && (tainted.IsZero() || t.TimeAdded.Time.Before(tainted)) {
					tainted = t.TimeAdded.Time
				}
			}
			g.Expect(tainted).NotTo(BeZero(), "member2 tainted NoExecute while down")
		}).WithContext(ctx).Should(Succeed())
		time.Sleep(time.Until(down.Add(5 * time.Second)))
		Expect(m2.StartAPIServer(ctx)).To(Succeed())
		framework.EventuallyClustersReady(ctx, env.Host, "member2")
		env.EventuallyMemberSettled(ctx, "member2")
		// Nothing moves up to the toleration's end and 5 s beyond (TimeAdded is truncated to
		// the second; the failover controller acts at the end, give or take its queue): an
		// eviction timed from the taint would come in that window.
		guard := max(time.Until(tainted.Add(10*time.Second+5*time.Second)), 2*time.Second)
		Consistently(func(g Gomega) {
			rb := bindingOf(ctx, g, ns, "web")
			g.Expect(targetReplicas(rb)).To(Equal(even))
			g.Expect(rb.Spec.GracefulEvictionTasks).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(guard).Should(Succeed())
	})

	It("moves a stopped member's replicas to the others after the toleration, never below what remained, and purges gracefully", func(ctx context.Context) {
		// Every second: the replicas ready on the members that stay up never drop below
		// what they had.
		var mu sync.Mutex
		lowest := int32(1 << 30)
		sampleCtx, stopSampling := context.WithCancel(ctx)
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-sampleCtx.Done():
					return
				case <-t.C:
					n := readyIn(sampleCtx, "member1", dep) + readyIn(sampleCtx, "member3", dep)
					if sampleCtx.Err() != nil {
						return
					}
					mu.Lock()
					lowest = min(lowest, n)
					mu.Unlock()
				}
			}
		}()
		defer func() { stopSampling(); <-sampled }()

		m2 := env.Fleet.Member("member2")
		down := time.Now()
		Expect(m2.KillAPIServer()).To(Succeed())
		restarted := false
		DeferCleanup(func(ctx context.Context) {
			if !restarted {
				_ = m2.StartAPIServer(ctx)
			}
		})
		// (The eviction task may come and go between two looks, when the new pods are
		// ready at once: the events below tell its story.)
		Eventually(func(g Gomega) map[string]int32 { return targetReplicas(bindingOf(ctx, g, ns, "web")) }).
			WithContext(ctx).Should(Equal(map[string]int32{"member1": 3, "member3": 3}))
		moved := time.Since(down)
		Eventually(func() int32 { return readyIn(ctx, "member1", dep) + readyIn(ctx, "member3", dep) }).WithContext(ctx).Should(Equal(int32(6)))
		readyElsewhere := time.Since(down)
		GinkgoWriter.Printf("member2 stopped: replicas moved after %s, 6 Ready on member1+member3 after %s (toleration 10 s)\n",
			moved.Round(100*time.Millisecond), readyElsewhere.Round(100*time.Millisecond))

		// Healthy elsewhere: the task is done and member2's Work goes (it finishes going
		// once member2 answers again, which removes the Deployment there).
		work := types.NamespacedName{Namespace: wellknown.ExecutionNamespace("member2"), Name: bindings.WorkName("Deployment", ns, "web")}
		Eventually(func(g Gomega) {
			rb := bindingOf(ctx, g, ns, "web")
			g.Expect(rb.Spec.GracefulEvictionTasks).To(BeEmpty())
			w := &workv1alpha1.Work{}
			err := env.Host.Get(ctx, work, w)
			g.Expect(apierrors.IsNotFound(err) || (err == nil && w.DeletionTimestamp != nil)).To(BeTrue(), "member2's Work is being deleted: %v", err)
		}).WithContext(ctx).Should(Succeed())
		stopSampling()
		<-sampled
		mu.Lock()
		Expect(lowest).To(BeNumerically(">=", 4), "ready replicas on member1+member3 fell below the 4 they had")
		mu.Unlock()
		Eventually(func(g Gomega) []string {
			var notes []string
			for _, e := range framework.EventsFor(ctx, g, env.Host, ns, "Deployment", "web") {
				notes = append(notes, e.Reason+": "+e.Note)
			}
			return notes
		}).WithContext(ctx).Should(ContainElements(
			ContainSubstring(failover.EventReasonEvictWorkloadFromClusterSucceed+": Evicted from cluster member2 (TaintManager)"),
			ContainSubstring(failover.EventReasonGracefulEvictionDone+": Eviction from cluster member2 is done, its Work there is removed: the workload is healthy on member1, member3"),
		))

		Expect(m2.StartAPIServer(ctx)).To(Succeed())
		restarted = true
		framework.EventuallyClustersReady(ctx, env.Host, "member2")
		env.EventuallyMemberSettled(ctx, "member2")
		Eventually(func() error { return env.Host.Get(ctx, work, &workv1alpha1.Work{}) }).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func() error {
			return env.Members["member2"].Get(ctx, client.ObjectKeyFromObject(dep), &appsv1.Deployment{})
		}).
			WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		// Back and Ready, member2 gets nothing back: a Divided placement stays until a rebalance.
		Consistently(func(g Gomega) map[string]int32 { return targetReplicas(bindingOf(ctx, g, ns, "web")) }).
			WithContext(ctx).WithTimeout(5 * time.Second).Should(Equal(map[string]int32{"member1": 3, "member3": 3}))
	})
})

var _ = Describe("Application failover", func() {
	It("moves a Deployment whose pods never become ready on one member", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-appfailover")
		pp := dividedOver(ns, "app", 300, "member1", "member3")
		pp.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](5)},
			PurgeMode:          policyv1alpha1.PurgeModeDirectly,
		}}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		// On member3 its pods ask for a node that does not exist: they never run there.
		Expect(env.Host.Create(ctx, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nowhere"},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "app"}},
				OverrideRules: []policyv1alpha1.RuleWithCluster{{
					TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member3"}},
					Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
						Path: "/spec/template/spec/nodeSelector", Operator: policyv1alpha1.OverriderOpAdd,
						Value: apiextensionsv1.JSON{Raw: []byte(`{"flotilla.test/no-such-node":"true"}`)}}}},
				}},
			}})).To(Succeed())
		app := deploymentTemplate(ns, "app", 2)
		Expect(env.Host.Create(ctx, app.DeepCopy())).To(Succeed())
		Eventually(func() int32 { return readyIn(ctx, "member1", app) }).WithContext(ctx).Should(Equal(int32(1)))
		start := time.Now()

		Eventually(func(g Gomega) {
			rb := bindingOf(ctx, g, ns, "app")
			g.Expect(targetReplicas(rb)).To(Equal(map[string]int32{"member1": 2}))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func() int32 { return readyIn(ctx, "member1", app) }).WithContext(ctx).Should(Equal(int32(2)))
		GinkgoWriter.Printf("application failover: 2 Ready on member1 %s after the first became ready there (toleration 5 s)\n",
			time.Since(start).Round(100*time.Millisecond))
		// Directly: member3's Deployment is gone at once.
		Eventually(func() error {
			return env.Members["member3"].Get(ctx, client.ObjectKeyFromObject(app), &appsv1.Deployment{})
		}).
			WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func(g Gomega) []string {
			var notes []string
			for _, e := range framework.EventsFor(ctx, g, env.Host, ns, "Deployment", "app") {
				notes = append(notes, e.Reason+": "+e.Note)
			}
			return notes
		}).WithContext(ctx).Should(ContainElements(
			ContainSubstring(failover.EventReasonApplicationUnhealthy+": The workload is unhealthy on cluster member3"),
			ContainSubstring(failover.EventReasonEvictWorkloadFromClusterSucceed+": Evicted from cluster member3 (ApplicationFailover)"),
		))
	})
})
