package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// placedInOrder waits until every binding is scheduled and returns their priorities in the
// order the scheduler placed them: with one worker, that of their last writes (the
// resourceVersions of one etcd increase with every write).
func placedInOrder(ctx context.Context, hc client.Client, ns string, names []string) []int32 {
	GinkgoHelper()
	type placed struct {
		rv       int64
		priority int32
	}
	var got []placed
	Eventually(func(g Gomega) {
		got = got[:0]
		for _, n := range names {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(hc.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, rb)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue(), n)
			rv, err := strconv.ParseInt(rb.ResourceVersion, 10, 64)
			g.Expect(err).NotTo(HaveOccurred())
			var p int32
			if rb.Spec.SchedulePriority != nil {
				p = rb.Spec.SchedulePriority.Priority
			}
			got = append(got, placed{rv, p})
		}
	}).WithContext(ctx).Should(Succeed())
	slices.SortFunc(got, func(a, b placed) int { return int(a.rv - b.rv) })
	out := make([]int32, len(got))
	for i, p := range got {
		out[i] = p.priority
	}
	return out
}

var _ = Describe("Scheduling priority", func() {
	It("places the bindings that wait together in the order of their schedulePriority", func(ctx SpecContext) {
		h, err := startHost(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(h.Stop)
		hc, err := client.New(h.RESTConfig(), client.Options{Scheme: flotillascheme.New()})
		Expect(err).NotTo(HaveOccurred())
		Expect(createCluster(ctx, hc, "m1", nil)).To(Succeed())
		ns := "prio"
		Expect(hc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		priorities := []int32{0, 1000, 5, -3, 200000, 42, 7, 1000000, 0, 13, 99, 500}
		create := func(prefix, cluster string) []string {
			var names []string
			for i, p := range priorities {
				rb := newBinding(ns, fmt.Sprintf("%s-%d", prefix, i), 1, weighted(cluster))
				if p != 0 {
					rb.Spec.SchedulePriority = &workv1alpha2.SchedulePriority{Priority: p}
				}
				Expect(hc.Create(ctx, rb)).To(Succeed())
				names = append(names, rb.Name)
			}
			return names
		}
		want := slices.Clone(priorities)
		slices.SortFunc(want, func(a, b int32) int { return int(b - a) })

		By("bindings waiting when the scheduler starts, with one worker")
		waiting := create("start", "m1")
		stop, err := startScheduler(h, 1, 100)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		Expect(placedInOrder(ctx, hc, ns, waiting)).To(Equal(want))

		By("bindings waiting for a cluster that becomes Ready")
		// Created not Ready: the bindings fail to place; then its Ready condition, in one
		// status update, brings them all back at once.
		Expect(hc.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "late"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}})).To(Succeed())
		late := create("late", "late")
		Eventually(func(g Gomega) {
			for _, n := range late {
				rb := &workv1alpha2.ResourceBinding{}
				g.Expect(hc.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, rb)).To(Succeed())
				g.Expect(meta.IsStatusConditionFalse(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue(), n)
			}
		}).WithContext(ctx).Should(Succeed())
		Expect(markReady(ctx, hc, "late")).To(Succeed())
		Expect(placedInOrder(ctx, hc, ns, late)).To(Equal(want))
	})
})
