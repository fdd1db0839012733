package scheduler_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

var _ = Describe("First placement at creation (PlaceNew)", func() {
	It("places a new binding without writing it, and the scheduler then writes only its status, once no binding-status write has reported it within the grace", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rb := newBinding(ns, "placed", 3, weighted("m1", "m2", "m3"))
		placed, err := placer.PlaceNew(ctx, rb)
		Expect(err).NotTo(HaveOccurred())
		Expect(placed).To(BeTrue())
		Expect(replicasOf(rb)).To(Equal(map[string]int32{"m1": 1, "m2": 1, "m3": 1}))
		Expect(rb.Annotations).To(HaveKey(wellknown.AppliedPlacementAnnotation))
		Expect(c.Create(ctx, rb)).To(Succeed())

		Eventually(func(g Gomega) {
			got := get(ctx, ns, "placed")
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue())
			g.Expect(got.Status.SchedulerObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.LastScheduledTime).NotTo(BeNil())
			g.Expect(got.Status.LastScheduledTime.Time).To(BeTemporally("==", got.CreationTimestamp.Time), "placed when it was created")
			g.Expect(got.Generation).To(Equal(int64(1)), "the placement stays as created")
		}).WithContext(ctx).Should(Succeed())
		path := "/apis/work.karmada.io/v1alpha2/namespaces/" + ns + "/resourcebindings/placed"
		Expect(managerRequests(http.MethodPatch, path)).To(BeZero(), "no spec write")
		Expect(managerRequests(http.MethodPatch, path+"/status")).To(Equal(1))
	})

	It("leaves to the scheduler what it cannot place, another scheduler's bindings, suspended ones, affinity groups and workload-affinity groups", func(ctx context.Context) {
		ns := newNamespace(ctx)
		unfit := newBinding(ns, "unfit", 2, weighted("nowhere"))
		other := newBinding(ns, "other", 2, weighted("m1"))
		other.Spec.SchedulerName = "another-scheduler"
		paused := newBinding(ns, "paused", 2, weighted("m1"))
		paused.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
		groups := newBinding(ns, "groups", 2, &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
			{AffinityName: "first", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}}}})
		peers := newBinding(ns, "peers", 2, weighted("m1"))
		peers.Spec.WorkloadAffinityGroups = &workv1alpha2.WorkloadAffinityGroups{AntiAffinityGroup: "app=a"}
		for _, rb := range []*workv1alpha2.ResourceBinding{unfit, other, paused, groups, peers} {
			placed, err := placer.PlaceNew(ctx, rb)
			Expect(err).NotTo(HaveOccurred())
			Expect(placed).To(BeFalse(), rb.Name)
			Expect(rb.Spec.Clusters).To(BeEmpty(), rb.Name)
			Expect(rb.Annotations).NotTo(HaveKey(wellknown.AppliedPlacementAnnotation), rb.Name)
		}
		By("the scheduler still reports an unschedulable binding once created")
		Expect(c.Create(ctx, unfit)).To(Succeed())
		Eventually(func(g Gomega) {
			got := get(ctx, ns, "unfit")
			cond := meta.FindStatusCondition(got.Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(BeEquivalentTo("False"))
		}).WithContext(ctx).Should(Succeed())
	})
})
