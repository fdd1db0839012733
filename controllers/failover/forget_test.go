package failover_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/failover"
)

var _ = Describe("What failover keeps of a binding", func() {
	It("is kept while it holds: a countdown told goes with its taint, and everything goes with the binding", func(ctx context.Context) {
		// A cluster of its own: its taint touches no other spec's bindings.
		const cluster = "forget-1"
		Expect(createCluster(ctx, cluster)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(c.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}))).To(Succeed())
		})
		ns := newNamespace(ctx)
		var rbs []*workv1alpha2.ResourceBinding
		for i := range 3 {
			rb := divided(ns, fmt.Sprintf("churn-%d", i), 1, cluster)
			rb.Spec.Placement.ClusterTolerations = []corev1.Toleration{tolerate("forget", 3600)}
			rb.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
				DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](3600)}}}
			Expect(c.Create(ctx, rb)).To(Succeed())
			rbs = append(rbs, rb)
		}
		for _, rb := range rbs {
			Eventually(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).Should(Equal(map[string]int32{cluster: 1}))
			writeWork(ctx, get(ctx, rb), cluster, 1, workv1alpha1.ResourceUnhealthy, map[string]any{"readyReplicas": 0})
		}
		setTaints(ctx, cluster, noExecute("forget"))
		for _, rb := range rbs {
			Eventually(func(g Gomega) {
				g.Expect(eventNotes(ctx, g, ns, "ResourceBinding", rb.Name, failover.EventReasonTaintToleration)).To(HaveLen(1))
				told, unhealthy := reconciler.Remembers(client.ObjectKeyFromObject(rb))
				g.Expect(told).To(Equal(1), "the countdown told")
				g.Expect(unhealthy).To(Equal(1), "the unhealthy countdown")
			}).WithContext(ctx).Should(Succeed())
		}

		By("the taint goes: its countdown told is forgotten, the unhealthy countdown stays")
		setTaints(ctx, cluster)
		for _, rb := range rbs {
			Eventually(func(g Gomega) {
				told, unhealthy := reconciler.Remembers(client.ObjectKeyFromObject(rb))
				g.Expect(told).To(BeZero(), "the countdown told of a taint that went")
				g.Expect(unhealthy).To(Equal(1), "the unhealthy countdown")
			}).WithContext(ctx).Should(Succeed())
		}

		By("the bindings go: nothing is kept of them")
		for _, rb := range rbs {
			Expect(c.Delete(ctx, rb)).To(Succeed())
		}
		for _, rb := range rbs {
			Eventually(func(g Gomega) {
				told, unhealthy := reconciler.Remembers(client.ObjectKeyFromObject(rb))
				g.Expect(told).To(BeZero())
				g.Expect(unhealthy).To(BeZero())
			}).WithContext(ctx).Should(Succeed())
		}
	})
})
