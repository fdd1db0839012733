package rebalancer_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

func deployment(ns, name string) appsv1alpha1.Workload {
	return appsv1alpha1.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}
}

// binding creates the binding the detector would have created for the workload.
func binding(ctx context.Context, w appsv1alpha1.Workload) client.Object {
	GinkgoHelper()
	spec := workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: w.APIVersion, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name},
		Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}},
	}
	meta := metav1.ObjectMeta{Name: detector.BindingName(w.Kind, w.Name), Namespace: w.Namespace}
	var b client.Object = &workv1alpha2.ResourceBinding{ObjectMeta: meta, Spec: spec}
	if w.Namespace == "" {
		b = &workv1alpha2.ClusterResourceBinding{ObjectMeta: meta, Spec: spec}
	}
	Expect(env.Host.Create(ctx, b)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, b))).To(Succeed()) })
	return b
}

func triggeredAt(ctx context.Context, g Gomega, b client.Object) *metav1.Time {
	env.Get(ctx, g, b)
	switch b := b.(type) {
	case *workv1alpha2.ResourceBinding:
		return b.Spec.RescheduleTriggeredAt
	case *workv1alpha2.ClusterResourceBinding:
		return b.Spec.RescheduleTriggeredAt
	}
	return nil
}

func rebalancerFor(ctx context.Context, name string, ttl *int32, workloads ...appsv1alpha1.Workload) *appsv1alpha1.WorkloadRebalancer {
	GinkgoHelper()
	wr := &appsv1alpha1.WorkloadRebalancer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1alpha1.WorkloadRebalancerSpec{Workloads: workloads, TTLSecondsAfterFinished: ttl},
	}
	Expect(env.Host.Create(ctx, wr)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, wr))).To(Succeed()) })
	return wr
}

// finished waits for the rebalancer to have finished its current generation and returns it.
func finished(ctx context.Context, wr *appsv1alpha1.WorkloadRebalancer) *appsv1alpha1.WorkloadRebalancer {
	GinkgoHelper()
	got := &appsv1alpha1.WorkloadRebalancer{}
	Eventually(func(g Gomega) {
		g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(wr), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.FinishTime).NotTo(BeNil())
	}).WithContext(ctx).Should(Succeed())
	return got
}

var _ = Describe("WorkloadRebalancer", func() {
	It("triggers each workload's binding at the rebalancer's creation time and reports missing bindings", func(ctx SpecContext) {
		ns := env.CreateNamespace(ctx, "rebal-basic", nil).Name
		web, role := deployment(ns, "web"), appsv1alpha1.Workload{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"}
		missing := deployment(ns, "missing")
		// A binding of the same name whose resource is another group's Deployment.
		other := appsv1alpha1.Workload{APIVersion: "example.io/v1", Kind: "Deployment", Namespace: ns, Name: "other"}
		webRB, roleCRB := binding(ctx, web), binding(ctx, role)
		binding(ctx, other)
		otherAsApps := deployment(ns, "other")

		wr := rebalancerFor(ctx, "basic", nil, web, missing, role, otherAsApps, web)
		got := finished(ctx, wr)
		Expect(got.Status.ObservedWorkloads).To(Equal([]appsv1alpha1.ObservedWorkload{
			{Workload: web, Result: appsv1alpha1.RebalanceSuccessful},
			{Workload: missing, Result: appsv1alpha1.RebalanceFailed, Reason: appsv1alpha1.RebalanceReferencedBindingNotFound},
			{Workload: role, Result: appsv1alpha1.RebalanceSuccessful},
			{Workload: otherAsApps, Result: appsv1alpha1.RebalanceFailed, Reason: appsv1alpha1.RebalanceReferencedBindingNotFound},
		}))
		Expect(got.Status.ObservedGeneration).To(Equal(int64(1)))
		Expect(got.Status.FinishTime.Before(&got.CreationTimestamp)).To(BeFalse())

		for _, b := range []client.Object{webRB, roleCRB} {
			at := triggeredAt(ctx, Default, b)
			Expect(at).NotTo(BeNil(), "binding %s", b.GetName())
			Expect(at.Equal(&got.CreationTimestamp)).To(BeTrue(), "binding %s triggered at %v, rebalancer created at %v", b.GetName(), at, got.CreationTimestamp)
		}
		Eventually(func(g Gomega) {
			g.Expect(env.EventReasons(ctx, g, got)).To(ContainElements(
				appsv1alpha1.EventReasonRescheduleTriggered, appsv1alpha1.EventReasonRescheduleFailed, appsv1alpha1.EventReasonRebalanceFinished))
		}).WithContext(ctx).Should(Succeed())
	})

	It("triggers a workload once, and the workloads added to the spec when they appear", func(ctx SpecContext) {
		ns := env.CreateNamespace(ctx, "rebal-once", nil).Name
		first, second := deployment(ns, "first"), deployment(ns, "second")
		firstRB := binding(ctx, first)
		wr := finished(ctx, rebalancerFor(ctx, "once", nil, first))
		Expect(triggeredAt(ctx, Default, firstRB)).NotTo(BeNil())

		// Clear the first trigger: a rebalancer that triggered it again would set it back.
		rb := firstRB.(*workv1alpha2.ResourceBinding)
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		rb.Spec.RescheduleTriggeredAt = nil
		Expect(env.Host.Update(ctx, rb)).To(Succeed())

		secondRB := binding(ctx, second)
		wr.Spec.Workloads = append(wr.Spec.Workloads, second)
		Expect(env.Host.Update(ctx, wr)).To(Succeed())
		got := finished(ctx, wr)
		Expect(got.Status.ObservedGeneration).To(Equal(int64(2)))
		Expect(got.Status.ObservedWorkloads).To(Equal([]appsv1alpha1.ObservedWorkload{
			{Workload: first, Result: appsv1alpha1.RebalanceSuccessful},
			{Workload: second, Result: appsv1alpha1.RebalanceSuccessful},
		}))
		Expect(triggeredAt(ctx, Default, secondRB)).NotTo(BeNil())
		Expect(triggeredAt(ctx, Default, firstRB)).To(BeNil(), "the first workload was triggered twice")
	})

	It("never moves a binding's trigger back in time", func(ctx SpecContext) {
		ns := env.CreateNamespace(ctx, "rebal-later", nil).Name
		w := deployment(ns, "web")
		b := binding(ctx, w).(*workv1alpha2.ResourceBinding)
		later := metav1.NewTime(time.Now().Add(time.Hour).Truncate(time.Second))
		b.Spec.RescheduleTriggeredAt = &later
		Expect(env.Host.Update(ctx, b)).To(Succeed())

		got := finished(ctx, rebalancerFor(ctx, "later", nil, w))
		Expect(got.Status.ObservedWorkloads).To(Equal([]appsv1alpha1.ObservedWorkload{{Workload: w, Result: appsv1alpha1.RebalanceSuccessful}}))
		Expect(triggeredAt(ctx, Default, b).Equal(&later)).To(BeTrue())
	})

	It("deletes a finished rebalancer ttlSecondsAfterFinished after it finished, and keeps one without a TTL", func(ctx SpecContext) {
		ns := env.CreateNamespace(ctx, "rebal-ttl", nil).Name
		w := deployment(ns, "web")
		binding(ctx, w)
		kept := rebalancerFor(ctx, "kept", nil, w)
		now := rebalancerFor(ctx, "ttl-zero", ptr.To[int32](0), w)
		later := rebalancerFor(ctx, "ttl-three", ptr.To[int32](3), w)

		Eventually(fleettest.Gone(ctx, env.Host, now)).WithContext(ctx).Should(BeTrue())
		finishedLater := finished(ctx, later)
		Eventually(fleettest.Gone(ctx, env.Host, later)).WithContext(ctx).Should(BeTrue())
		expiry := finishedLater.Status.FinishTime.Add(3 * time.Second)
		Expect(time.Now().Before(expiry)).To(BeFalse(), "deleted before finishTime + 3s (%v)", expiry)

		finished(ctx, kept)
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(kept), &appsv1alpha1.WorkloadRebalancer{})).To(Succeed())
	})
})
