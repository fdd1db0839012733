package scheduler_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

var _ = Describe("Scheduler reconciler, triggered reschedule", func() {
	It("keeps a Divided binding on a cordoned cluster, and schedules it from scratch when spec.rescheduleTriggeredAt asks", func(ctx context.Context) {
		for _, n := range []string{"fresh-1", "fresh-2", "fresh-3"} {
			Expect(createCluster(ctx, c, n, nil)).To(Succeed())
		}
		ns := newNamespace(ctx)
		Expect(c.Create(ctx, newBinding(ns, "spread", 6, weighted("fresh-1", "fresh-2", "fresh-3")))).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "spread")) }).WithContext(ctx).WithTimeout(30 * time.Second).
			Should(Equal(map[string]int32{"fresh-1": 2, "fresh-2": 2, "fresh-3": 2}))

		// Cordon fresh-3: a NoSchedule taint keeps what is there.
		cl := &clusterv1alpha1.Cluster{}
		Expect(c.Get(ctx, types.NamespacedName{Name: "fresh-3"}, cl)).To(Succeed())
		cl.Spec.Taints = []corev1.Taint{{Key: wellknown.TaintClusterCordoned, Effect: corev1.TaintEffectNoSchedule}}
		Expect(c.Update(ctx, cl)).To(Succeed())
		// A change that makes the scheduler run a cycle (the replicas) shows that an ordinary
		// reschedule keeps the cordoned cluster.
		rb := get(ctx, ns, "spread")
		patch := client.MergeFrom(rb.DeepCopy())
		rb.Spec.Replicas = 9
		Expect(c.Patch(ctx, rb, patch)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "spread")) }).WithContext(ctx).WithTimeout(30 * time.Second).
			Should(Equal(map[string]int32{"fresh-1": 3, "fresh-2": 3, "fresh-3": 3}))

		// A trigger newer than the last scheduling, and past (as a rebalancer's creation time
		// is): from scratch, the cordoned cluster is out.
		// (once the scheduler's status write of that cycle has landed)
		Eventually(func(g Gomega) {
			rb = get(ctx, ns, "spread")
			g.Expect(rb.Status.SchedulerObservedGeneration).To(Equal(rb.Generation))
			g.Expect(rb.Status.LastScheduledTime).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		at := metav1.NewTime(rb.Status.LastScheduledTime.Add(time.Second))
		Eventually(func() bool { return time.Now().After(at.Time) }).WithTimeout(5 * time.Second).Should(BeTrue())
		patch = client.MergeFrom(rb.DeepCopy())
		rb.Spec.RescheduleTriggeredAt = &at
		Expect(c.Patch(ctx, rb, patch)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "spread")) }).WithContext(ctx).WithTimeout(30 * time.Second).
			Should(SatisfyAny(Equal(map[string]int32{"fresh-1": 5, "fresh-2": 4}), Equal(map[string]int32{"fresh-1": 4, "fresh-2": 5})))
		Eventually(func(g Gomega) {
			rb = get(ctx, ns, "spread")
			g.Expect(rb.Status.SchedulerObservedGeneration).To(Equal(rb.Generation))
			g.Expect(rb.Status.LastScheduledTime.Before(&at)).To(BeFalse(), "lastScheduledTime %v is before the trigger %v", rb.Status.LastScheduledTime, at)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
