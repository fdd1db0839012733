package scheduler_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// setCPU reports the cluster's cpu (free, nothing allocated) and pod slots.
func setCPU(ctx context.Context, name, cpu string) {
	GinkgoHelper()
	cl := &clusterv1alpha1.Cluster{}
	Expect(c.Get(ctx, types.NamespacedName{Name: name}, cl)).To(Succeed())
	cl.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")}}
	Expect(c.Status().Update(ctx, cl)).To(Succeed())
}

func flinkComponents(taskmanagers int32) []workv1alpha2.Component {
	req := func(cpu string) *workv1alpha2.ComponentReplicaRequirements {
		return &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	return []workv1alpha2.Component{
		{Name: "jobmanager", Replicas: 1, ReplicaRequirements: req("1")},
		{Name: "taskmanager", Replicas: taskmanagers, ReplicaRequirements: req("2")},
	}
}

var _ = Describe("Multi-component workloads", func() {
	It("places the whole set on the one cluster that fits, fails saying by how much, and places again when capacity grows", func(ctx context.Context) {
		for _, n := range []string{"flink-small", "flink-big"} {
			Expect(createCluster(ctx, c, n, nil)).To(Succeed())
		}
		setCPU(ctx, "flink-small", "4") // a set of jobmanager 1 + taskmanager 3 needs 7 cpu
		setCPU(ctx, "flink-big", "16")
		ns := newNamespace(ctx)
		p := &policyv1alpha1.Placement{
			ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"flink-small", "flink-big"}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted},
		}
		rb := newBinding(ns, "wordcount", 0, p)
		rb.Spec.Components = flinkComponents(3)
		Expect(c.Create(ctx, rb)).To(Succeed())

		whole := func(taskmanagers int32) []workv1alpha2.ComponentReplicas {
			return []workv1alpha2.ComponentReplicas{{Name: "jobmanager", Replicas: 1}, {Name: "taskmanager", Replicas: taskmanagers}}
		}
		Eventually(func(g Gomega) {
			rb := get(ctx, ns, "wordcount")
			g.Expect(rb.Spec.Clusters).To(Equal([]workv1alpha2.TargetCluster{{Name: "flink-big", Components: whole(3)}}))
			cond := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Message).To(Equal("Binding has been scheduled to flink-big (jobmanager 1, taskmanager 3)"))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("scaling the taskmanagers past every cluster's capacity")
		rb = get(ctx, ns, "wordcount")
		rb.Spec.Components = flinkComponents(12) // 25 cpu; 9 more taskmanagers need 18 where it runs
		Expect(c.Update(ctx, rb)).To(Succeed())
		Eventually(func(g Gomega) {
			rb := get(ctx, ns, "wordcount")
			cond := meta.FindStatusCondition(rb.Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(wellknown.ReasonBindingUnschedulable))
			g.Expect(cond.Message).To(ContainSubstring("cannot hold the replicas added to the components it runs (jobmanager 0, taskmanager 9): cpu short by 2 (set needs 18, 16 free)"))
			g.Expect(cond.Message).To(ContainSubstring("cannot hold one set of the components (jobmanager 1, taskmanager 12): cpu short by 21 (set needs 25, 4 free)"))
			g.Expect(rb.Spec.Clusters).To(Equal([]workv1alpha2.TargetCluster{{Name: "flink-big", Components: whole(3)}}), "the running set stays where it is")
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("growing the big cluster")
		setCPU(ctx, "flink-big", "32")
		Eventually(func(g Gomega) {
			rb := get(ctx, ns, "wordcount")
			g.Expect(rb.Spec.Clusters).To(Equal([]workv1alpha2.TargetCluster{{Name: "flink-big", Components: whole(12)}}))
			g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue())
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})
})
