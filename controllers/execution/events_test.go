package execution_test

import (
	"context"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// A sharded standby sets up the leader-only controllers (cluster, multi-cluster services)
// beside the execution controller, on the same member connection manager, and never starts
// them. Their member events used to queue in channels of 1,024 that nobody read: after that
// many events the member's informers stopped, and drift was no longer repaired.
var _ = Describe("Member events with a controller set up but never started, and one that never reads", func() {
	It("still reach the execution controller after 1,100 of them: drift is put back", func(ctx SpecContext) {
		// Set up as a standby does: watching member events, never started.
		standby, err := controller.NewUnmanaged("standby", controller.Options{
			SkipNameValidation: ptr.To(true),
			Reconciler:         reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }),
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(standby.Watch(members.Source("standby", &handler.EnqueueRequestForObject{}))).To(Succeed())
		// Started, but its handler never returns.
		stuckCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		DeferCleanup(q.ShutDown)
		stuck := handler.Funcs{GenericFunc: func(ctx context.Context, _ event.GenericEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			<-ctx.Done()
		}}
		Expect(members.Source("stuck", stuck).Start(stuckCtx, q)).To(Succeed())

		ns := "exec-flood"
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		w := createWork(ctx, "member1", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)

		// 1,100 events from the member's ConfigMap informer: managed ConfigMaps no Work names.
		m := env.Members["member1"]
		DeferCleanup(func(ctx SpecContext) {
			Expect(m.DeleteAllOf(ctx, fleettest.ConfigMap(ns, "", nil), client.InNamespace(ns), client.MatchingLabels{"flood": "true"})).To(Succeed())
		})
		const n, writers = 1100, 8
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				defer GinkgoRecover()
				for j := i; j < n; j += writers {
					c := fleettest.ConfigMap(ns, fmt.Sprintf("flood-%d", j), nil)
					c.Labels = map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue, "flood": "true"}
					Expect(m.Create(ctx, c)).To(Succeed())
				}
			})
		}
		wg.Wait()

		c := memberObject(ctx, Default, "member1", cm)
		patch := client.MergeFrom(c.DeepCopy())
		c.Data = map[string]string{"k": "changed by hand"}
		Expect(m.Patch(ctx, c, patch)).To(Succeed())
		Eventually(func(g Gomega) map[string]string { return memberObject(ctx, g, "member1", cm).Data }).
			WithContext(ctx).Should(Equal(map[string]string{"k": "v"}))
	})
})
