package scheduler_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// roomTaint keeps the other specs' bindings off this spec's clusters.
var roomTaint = corev1.Taint{Key: "flotilla.io/test-room", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// createRoomCluster creates a Ready cluster with nodes of 16 free CPUs (count of them) and a
// pod count, tainted with roomTaint.
func createRoomCluster(ctx context.Context, name string, nodes int32) {
	cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1", Taints: []corev1.Taint{roomTaint}}}
	Expect(c.Create(ctx, cl)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(c.Delete(ctx, cl))).To(Succeed()) })
	Expect(markReady(ctx, c, name)).To(Succeed())
	Expect(c.Get(ctx, client.ObjectKey{Name: name}, cl)).To(Succeed())
	per := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourcePods: resource.MustParse("110")}
	cl.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(16*int64(nodes), resource.DecimalSI),
			corev1.ResourcePods: *resource.NewQuantity(110*int64(nodes), resource.DecimalSI)},
		NodeGroups: []clusterv1alpha1.NodeGroup{{Count: nodes, Free: per}},
	}
	Expect(c.Status().Update(ctx, cl)).To(Succeed())
}

var _ = Describe("Capacity", func() {
	It("does not double-book: bindings created at once never overfill the small cluster", func(ctx context.Context) {
		ns := newNamespace(ctx)
		// small: one node, room for two 6-CPU replicas; large: ten nodes.
		createRoomCluster(ctx, "room-small", 1)
		createRoomCluster(ctx, "room-large", 10)
		const bindings = 8
		for i := range bindings {
			rb := withCPU(ns, fmt.Sprintf("burst-%d", i), 2, "6")
			rb.Spec.Placement = weighted("room-small", "room-large")
			rb.Spec.Placement.ClusterTolerations = []corev1.Toleration{{Key: roomTaint.Key, Operator: corev1.TolerationOpExists}}
			Expect(c.Create(ctx, rb)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			list := &workv1alpha2.ResourceBindingList{}
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var small, total int32
			for _, rb := range list.Items {
				for _, tc := range rb.Spec.Clusters {
					total += tc.Replicas
					if tc.Name == "room-small" {
						small += tc.Replicas
					}
				}
			}
			g.Expect(total).To(Equal(int32(2 * bindings)))
			// Equal weights would put one replica of each on room-small, 8 × 6 CPUs on 16.
			g.Expect(small).To(BeNumerically("<=", 2), "room-small holds two 6-CPU replicas")
		}).WithContext(ctx).Should(Succeed())

		By("a binding needing more than the nodes hold is refused with the reason")
		rb := withCPU(ns, "huge", 1, "32")
		rb.Spec.Placement = &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"room-small", "room-large"}},
			ClusterTolerations: []corev1.Toleration{{Key: roomTaint.Key, Operator: corev1.TolerationOpExists}},
			ReplicaScheduling:  &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}
		Expect(c.Create(ctx, rb)).To(Succeed())
		Eventually(func(g Gomega) {
			cond := scheduledCondition(ctx, g, ns, "huge")
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Message).To(ContainSubstring("2 had no room for one replica on its nodes"))
		}).WithContext(ctx).Should(Succeed())
	})
})
