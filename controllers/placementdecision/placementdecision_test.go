package placementdecision_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/placementdecision"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

const (
	inventory = "inventory"
	apps      = "apps"
)

// newBinding creates a binding for the template, scheduled to clusters; it is deleted and
// released at the end of the spec.
func newBinding(ctx context.Context, tmpl client.Object, clusters []workv1alpha2.TargetCluster) client.Object {
	GinkgoHelper()
	b := env.Binding(tmpl, 6, clusters...)
	Expect(env.Host.Create(ctx, b)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(env.Host.Delete(ctx, b))).To(Succeed())
		env.Release(ctx, b)
	})
	return b
}

// reschedule replaces the binding's spec.clusters, as the scheduler does.
func reschedule(ctx context.Context, b client.Object, clusters []workv1alpha2.TargetCluster) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := b.DeepCopyObject().(client.Object)
		if err := env.Host.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
			return err
		}
		bindings.Spec(cur).Clusters = clusters
		return env.Host.Update(ctx, cur)
	})).To(Succeed())
}

// slicesOf are the binding's slices, by index, found by their decision key as a consumer
// would.
func slicesOf(ctx context.Context, g Gomega, b client.Object) []inventoryv1alpha1.PlacementDecision {
	ns, _ := placementdecision.Location(b.GetNamespace(), b.GetName(), inventory)
	list := &inventoryv1alpha1.PlacementDecisionList{}
	g.Expect(env.Host.List(ctx, list, client.InNamespace(ns),
		client.MatchingLabels{inventoryv1alpha1.DecisionKeyLabel: placementdecision.DecisionKey(b.GetNamespace(), b.GetName())})).To(Succeed())
	slices.SortFunc(list.Items, func(a, b inventoryv1alpha1.PlacementDecision) int {
		i, _ := strconv.Atoi(a.Labels[inventoryv1alpha1.DecisionIndexLabel])
		j, _ := strconv.Atoi(b.Labels[inventoryv1alpha1.DecisionIndexLabel])
		return i - j
	})
	return list.Items
}

// clustersOf are the clusters the slices list, in order.
func clustersOf(ds []inventoryv1alpha1.PlacementDecision) []string {
	var out []string
	for _, d := range ds {
		for _, c := range d.Decisions {
			out = append(out, c.ClusterProfileRef.Name)
		}
	}
	return out
}

func many(n int) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, n)
	for i := range out {
		out[i] = workv1alpha2.TargetCluster{Name: fmt.Sprintf("member-%03d", i), Replicas: 1}
	}
	return out
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("member-%03d", i)
	}
	return out
}

var _ = Describe("PlacementDecisions", func() {
	It("publish where a binding is scheduled, and follow its rescheduling", func(ctx SpecContext) {
		b := newBinding(ctx, fleettest.Deployment(apps, "web", 6), fleettest.Scheduled("member2", 4, "member1", 2))
		Eventually(func(g Gomega) {
			ds := slicesOf(ctx, g, b)
			g.Expect(ds).To(HaveLen(1))
			d := ds[0]
			g.Expect(d.Name).To(Equal(b.GetName() + "-0"))
			g.Expect(d.SchedulerName).To(Equal("default-scheduler"))
			g.Expect(d.Decisions).To(Equal([]inventoryv1alpha1.ClusterDecision{
				{ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Name: "member1", Namespace: inventory}, Reason: "scheduled with 2 of 6 replicas"},
				{ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Name: "member2", Namespace: inventory}, Reason: "scheduled with 4 of 6 replicas"},
			}))
			g.Expect(d.OwnerReferences).To(ConsistOf(HaveField("UID", b.GetUID())))
			g.Expect(env.EventReasons(ctx, g, b)).To(ContainElement(placementdecision.EventReasonPublished))
		}).WithContext(ctx).Should(Succeed())

		reschedule(ctx, b, fleettest.Scheduled("member3", 6))
		Eventually(func(g Gomega) {
			g.Expect(clustersOf(slicesOf(ctx, g, b))).To(Equal([]string{"member3"}))
			g.Expect(env.EventReasons(ctx, g, b)).To(ContainElement(placementdecision.EventReasonUpdated))
		}).WithContext(ctx).Should(Succeed())

		By("a binding scheduled nowhere has one empty slice")
		reschedule(ctx, b, nil)
		Eventually(func(g Gomega) {
			ds := slicesOf(ctx, g, b)
			g.Expect(ds).To(HaveLen(1))
			g.Expect(ds[0].Decisions).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})

	It("are sliced at 100 clusters, and the slices a smaller placement no longer needs are deleted", func(ctx SpecContext) {
		b := newBinding(ctx, fleettest.Deployment(apps, "wide", 250), many(250))
		Eventually(func(g Gomega) {
			ds := slicesOf(ctx, g, b)
			g.Expect(ds).To(HaveLen(3))
			for i, d := range ds {
				g.Expect(d.Name).To(Equal(fmt.Sprintf("%s-%d", b.GetName(), i)))
				g.Expect(len(d.Decisions)).To(BeNumerically("<=", inventoryv1alpha1.MaxDecisionsPerSlice))
			}
			g.Expect(clustersOf(ds)).To(Equal(names(250)))
		}).WithContext(ctx).Should(Succeed())

		reschedule(ctx, b, many(120))
		Eventually(func(g Gomega) {
			ds := slicesOf(ctx, g, b)
			g.Expect(ds).To(HaveLen(2))
			g.Expect(clustersOf(ds)).To(Equal(names(120)))
		}).WithContext(ctx).Should(Succeed())
	})

	It("are put back when someone else deletes or changes a slice", func(ctx SpecContext) {
		b := newBinding(ctx, fleettest.Deployment(apps, "kept", 2), fleettest.Scheduled("member1", 2))
		var uid string
		Eventually(func(g Gomega) {
			ds := slicesOf(ctx, g, b)
			g.Expect(ds).To(HaveLen(1))
			uid = string(ds[0].UID)
		}).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Delete(ctx, &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: apps, Name: b.GetName() + "-0"}})).To(Succeed())
		Eventually(func(g Gomega) {
			ds := slicesOf(ctx, g, b)
			g.Expect(ds).To(HaveLen(1))
			g.Expect(string(ds[0].UID)).NotTo(Equal(uid))
		}).WithContext(ctx).Should(Succeed())

		Expect(env.Host.Patch(ctx, &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: apps, Name: b.GetName() + "-0"}},
			client.RawPatch("application/merge-patch+json", []byte(`{"decisions":[{"clusterProfileRef":{"name":"elsewhere"}}]}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(clustersOf(slicesOf(ctx, g, b))).To(Equal([]string{"member1"}))
		}).WithContext(ctx).Should(Succeed())
	})

	It("of a ClusterResourceBinding are in the ClusterProfiles' namespace", func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
		b := newBinding(ctx, ns, fleettest.Scheduled("member1", 0, "member2", 0))
		Eventually(func(g Gomega) {
			ds := slicesOf(ctx, g, b)
			g.Expect(ds).To(HaveLen(1))
			g.Expect(ds[0].Namespace).To(Equal(inventory))
			g.Expect(ds[0].Name).To(Equal("crb-" + b.GetName() + "-0"))
			g.Expect(ds[0].Annotations).To(HaveKeyWithValue(placementdecision.BindingAnnotation, "ClusterResourceBinding/"+b.GetName()))
			g.Expect(clustersOf(ds)).To(Equal([]string{"member1", "member2"}))
		}).WithContext(ctx).Should(Succeed())
	})

	It("are removed with their binding", func(ctx SpecContext) {
		b := newBinding(ctx, fleettest.Deployment(apps, "gone", 250), many(150))
		Eventually(func(g Gomega) { g.Expect(slicesOf(ctx, g, b)).To(HaveLen(2)) }).WithContext(ctx).Should(Succeed())
		// The binding controller's finalizer holds the binding: the slices go when its
		// deletion starts.
		Expect(env.Host.Delete(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(slicesOf(ctx, g, b)).To(BeEmpty()) }).WithContext(ctx).Should(Succeed())
		env.Release(ctx, b)
		Consistently(func(g Gomega) { g.Expect(slicesOf(ctx, g, b)).To(BeEmpty()) }).WithContext(ctx).Should(Succeed())
	})
})
