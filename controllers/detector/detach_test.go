package detector_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

var _ = Describe("Releasing a dependency whose last workload let go a moment ago", func() {
	It("deletes its binding rather than detach it on a copy that still shows the workload", func(ctx SpecContext) {
		// A host of its own, whose detector reads the ConfigMap's binding as it was while a
		// workload required it. Found by a soak: a policy deleted with both a Deployment and
		// the ConfigMap it takes env from; the dependencies controller let go of the
		// ConfigMap's binding (which the policy still claimed), then the detector released
		// the ConfigMap on a cache that still showed the Deployment in requiredBy and kept the
		// binding as a dependency's. Required by nothing and claimed by nothing, it stayed.
		var stale *staleBinding
		bound := boundOnOwnHost(ctx, "detector-detach", "detach", func(c client.Client) client.Client {
			stale = &staleBinding{Client: c}
			return stale
		})
		own, mgr, pp, b := bound.own, bound.mgr, bound.pp, bound.binding

		By("a workload requires the ConfigMap, then lets go of it")
		setRequiredBy := func(snapshots []workv1alpha2.BindingSnapshot) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				g.Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
				b.Spec.RequiredBy = snapshots
				g.Expect(own.Host.Update(ctx, b)).To(Succeed())
			}).WithContext(ctx).Should(Succeed())
			Eventually(func(g Gomega) {
				cached := &workv1alpha2.ResourceBinding{}
				g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(b), cached)).To(Succeed())
				g.Expect(cached.ResourceVersion).To(Equal(b.ResourceVersion))
			}).WithContext(ctx).Should(Succeed())
		}
		setRequiredBy([]workv1alpha2.BindingSnapshot{{Namespace: "detach", Name: "web-deployment",
			Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}}}})
		stale.pin(b.DeepCopy())
		setRequiredBy(nil)

		By("the policy deleted while the detector's copy still shows the workload")
		Expect(own.Host.Delete(ctx, pp)).To(Succeed())
		// Before, the binding was detached at once: claim label gone, binding kept.
		Consistently(func(g Gomega) {
			g.Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			g.Expect(b.Labels).To(HaveKey(wellknown.PropagationPolicyPermanentIDLabel), "not detached on a stale copy")
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("the copy catches up")
		stale.pin(nil)
		Eventually(func(g Gomega) {
			g.Expect(own.Host.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			g.Expect(b.DeletionTimestamp).NotTo(BeNil(), "the binding is deleted")
		}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
		// Never scheduled (no scheduler here): nothing in the members to keep.
		own.Release(ctx, b)
	}, SpecTimeout(2*time.Minute))
})

// staleBinding is a client whose reads of one ResourceBinding return a pinned copy, while one
// is pinned: a cache that has not caught up with that binding.
type staleBinding struct {
	client.Client
	mu     sync.Mutex
	pinned *workv1alpha2.ResourceBinding
}

func (s *staleBinding) pin(b *workv1alpha2.ResourceBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pinned = b
}

func (s *staleBinding) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s.mu.Lock()
	pinned := s.pinned
	s.mu.Unlock()
	if into, ok := obj.(*workv1alpha2.ResourceBinding); ok && pinned != nil && key == (types.NamespacedName{Namespace: pinned.Namespace, Name: pinned.Name}) {
		pinned.DeepCopyInto(into)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}
