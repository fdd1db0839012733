package e2e

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// clusterPolicy propagates the named cluster-scoped objects to the named clusters.
func clusterPolicy(name string, selectors []policyv1alpha1.ResourceSelector, clusters ...string) *policyv1alpha1.ClusterPropagationPolicy {
	return &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: selectors,
			Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters}},
		}}
}

// in reports, for Eventually, the members among names where obj's namesake exists.
func in(ctx context.Context, obj client.Object, names ...string) func() []string {
	return func() []string {
		var out []string
		for _, m := range names {
			cur := obj.DeepCopyObject().(client.Object)
			if err := env.Members[m].Get(ctx, client.ObjectKeyFromObject(obj), cur); err == nil && cur.GetDeletionTimestamp() == nil {
				out = append(out, m)
			}
		}
		return out
	}
}

var allMembers = []string{"member1", "member2", "member3"}

// appliedIn waits until the Works of the binding are Applied=True in exactly the named
// clusters.
func appliedIn(ctx context.Context, rb client.Object, clusters ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) []string {
		g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		var out []string
		for _, it := range bindings.Status(rb).AggregatedStatus {
			if it.Applied {
				out = append(out, it.ClusterName)
			}
		}
		return out
	}).WithContext(ctx).Should(ConsistOf(clusters))
}

var _ = Describe("CRDs and their custom resources", Ordered, func() {
	const ns = "e2e-crd"
	typed := fleettest.CRD("e2e.flotilla.test", "Gadget")
	crd := fleettest.AsUnstructured(typed)
	one := fleettest.CustomResource(typed, ns, "one", map[string]any{"size": int64(1)})
	two := fleettest.CustomResource(typed, ns, "two", map[string]any{"size": int64(2)})
	crdSelector := []policyv1alpha1.ResourceSelector{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.GetName()}}
	crdBinding := &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: detector.BindingName("CustomResourceDefinition", crd.GetName())}}
	gadgets := func(name string, clusters ...string) *policyv1alpha1.PropagationPolicy {
		return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "e2e.flotilla.test/v1", Kind: "Gadget", Name: name}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters}},
			}}
	}

	It("propagate: the CRD by a ClusterPropagationPolicy, its custom resources after it", func(ctx SpecContext) {
		templateNamespace(ctx, ns)
		start := time.Now()
		Expect(env.Host.Create(ctx, crd.DeepCopy())).To(Succeed())
		Expect(env.Host.Create(ctx, clusterPolicy("e2e-crd", crdSelector, "member1", "member2"))).To(Succeed())
		Expect(env.Host.Create(ctx, gadgets("one", "member1"))).To(Succeed())
		Expect(env.Host.Create(ctx, gadgets("two", "member1", "member2"))).To(Succeed())
		// The host serves the kind a moment after the CRD is created.
		Eventually(func() error { return env.Host.Create(ctx, one.DeepCopy()) }).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Create(ctx, two.DeepCopy())).To(Succeed())

		Eventually(in(ctx, crd, allMembers...)).WithContext(ctx).Should(ConsistOf("member1", "member2"))
		// The scheduler places a custom resource on the members whose Cluster status says they
		// serve its kind. That status is collected every 30 s, and at once when a propagated
		// CRD is Established in the member: the custom resources need not wait that long.
		Eventually(in(ctx, one, allMembers...)).WithContext(ctx).WithTimeout(20 * time.Second).Should(ConsistOf("member1"))
		Eventually(in(ctx, two, allMembers...)).WithContext(ctx).WithTimeout(20 * time.Second).Should(ConsistOf("member1", "member2"))
		GinkgoWriter.Printf("custom resources in their members %s after their CRD was created\n", time.Since(start).Round(time.Millisecond))
		appliedIn(ctx, crdBinding, "member1", "member2")
		// Applied: the member caches watch the kind from then on (next spec). The member
		// credential was granted the new group by the first apply of each member.
		appliedIn(ctx, &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: detector.BindingName("Gadget", "one")}}, "member1")
		appliedIn(ctx, &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: detector.BindingName("Gadget", "two")}}, "member1", "member2")
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(crdBinding), crdBinding)).To(Succeed())
			for _, it := range crdBinding.Status.AggregatedStatus {
				g.Expect(it.Health).To(Equal(workv1alpha1.ResourceHealthy), "the CRD in %s is Established", it.ClusterName)
			}
		}).WithContext(ctx).Should(Succeed())
	})

	It("wait in a member for their CRD when it goes: the CRD is put back, then they are", func(ctx SpecContext) {
		// The CRD's policy holds it back from member2, so that nothing puts it back there
		// before the test does: its custom resource has to wait.
		suspend := func(clusters ...string) {
			cpp := &policyv1alpha1.ClusterPropagationPolicy{}
			Expect(env.Host.Get(ctx, client.ObjectKey{Name: "e2e-crd"}, cpp)).To(Succeed())
			cpp.Spec.Suspension = nil
			if len(clusters) > 0 {
				cpp.Spec.Suspension = &policyv1alpha1.Suspension{DispatchingOnClusters: &policyv1alpha1.SuspendClusters{ClusterNames: clusters}}
			}
			Expect(env.Host.Update(ctx, cpp)).To(Succeed())
		}
		crdWork := types.NamespacedName{Namespace: wellknown.ExecutionNamespace("member2"), Name: bindings.WorkName("CustomResourceDefinition", "", crd.GetName())}
		suspended := func(g Gomega) bool {
			w := &workv1alpha1.Work{}
			g.Expect(env.Host.Get(ctx, crdWork, w)).To(Succeed())
			return ptr.Deref(w.Spec.SuspendDispatching, false)
		}
		suspend("member2")
		Eventually(suspended).WithContext(ctx).Should(BeTrue())

		// Someone deletes the CRD in member2, and with it the custom resource there.
		old := two.DeepCopy()
		Expect(env.Members["member2"].Get(ctx, client.ObjectKeyFromObject(two), old)).To(Succeed())
		Expect(env.Members["member2"].Delete(ctx, crd.DeepCopy())).To(Succeed())

		// The custom resource's Work waits, and says so. (Only the event is checked: member2's
		// next status collection, every 30 s, no longer lists the kind, and the scheduler may
		// then take the Work away until the CRD is back, as Karmada's APIEnablement filter does.)
		work := types.NamespacedName{Namespace: wellknown.ExecutionNamespace("member2"), Name: bindings.WorkName("Gadget", ns, "two")}
		const waiting = "e2e.flotilla.test/v1 Gadget is not served by member2 yet; waiting for its CRD"
		Eventually(func(g Gomega) []string {
			var notes []string
			for _, ev := range framework.EventsFor(ctx, g, env.Host, work.Namespace, "Work", work.Name) {
				notes = append(notes, ev.Note)
			}
			return notes
		}).WithContext(ctx).Should(ContainElement(waiting))
		Expect(in(ctx, crd, "member2")()).To(BeEmpty(), "the CRD stays away from member2 while its dispatching is suspended")

		// The CRD is put back, then the custom resource.
		suspend()
		Eventually(func(g Gomega) {
			cur := two.DeepCopy()
			g.Expect(env.Members["member2"].Get(ctx, client.ObjectKeyFromObject(two), cur)).To(Succeed())
			g.Expect(cur.GetUID()).NotTo(Equal(old.GetUID()))
			w := &workv1alpha1.Work{}
			g.Expect(env.Host.Get(ctx, work, w)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, wellknown.WorkConditionApplied)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
	})

	It("reflect the status a member's operator writes into the binding, healthy", func(ctx SpecContext) {
		cur := two.DeepCopy()
		Expect(env.Members["member2"].Get(ctx, client.ObjectKeyFromObject(two), cur)).To(Succeed())
		Expect(unstructured.SetNestedField(cur.Object, map[string]any{
			"endpoint": "two.member2.example",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Reconciled",
				"message": "ready", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}},
		}, "status")).To(Succeed())
		Expect(env.Members["member2"].Status().Update(ctx, cur)).To(Succeed())

		rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: detector.BindingName("Gadget", "two")}}
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
			var item *workv1alpha2.AggregatedStatusItem
			for i := range rb.Status.AggregatedStatus {
				if rb.Status.AggregatedStatus[i].ClusterName == "member2" {
					item = &rb.Status.AggregatedStatus[i]
				}
			}
			g.Expect(item).NotTo(BeNil())
			g.Expect(item.Health).To(Equal(workv1alpha1.ResourceHealthy))
			g.Expect(item.Status).NotTo(BeNil())
			var st map[string]any
			g.Expect(json.Unmarshal(item.Status.Raw, &st)).To(Succeed())
			g.Expect(st).To(HaveKeyWithValue("endpoint", "two.member2.example"))
			g.Expect(st["conditions"]).To(ContainElement(And(HaveKeyWithValue("type", "Ready"), HaveKeyWithValue("status", "True"))))
		}).WithContext(ctx).Should(Succeed())
	})

	It("delete a member custom resource with its template", func(ctx SpecContext) {
		Expect(env.Host.Delete(ctx, one.DeepCopy())).To(Succeed())
		Eventually(in(ctx, one, allMembers...)).WithContext(ctx).Should(BeEmpty())
		Expect(in(ctx, two, allMembers...)()).To(ConsistOf("member1", "member2"))
	})

	It("keep the member CRDs when the CRD's policy is deleted (the CRD is unclaimed)", func(ctx SpecContext) {
		Expect(env.Host.Delete(ctx, clusterPolicy("e2e-crd", nil))).To(Succeed())
		// As in Karmada, the binding lives as long as its template: unclaimed, with no placement,
		// its clusters kept, so the member CRDs stay (and go with the CRD template).
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(crdBinding), crdBinding)).To(Succeed())
			g.Expect(crdBinding.Labels).NotTo(HaveKey(wellknown.ClusterPropagationPolicyPermanentIDLabel))
			g.Expect(crdBinding.Spec.Placement).To(BeNil())
		}).WithContext(ctx).Should(Succeed())
		for _, m := range []string{"member1", "member2"} {
			w := types.NamespacedName{Namespace: wellknown.ExecutionNamespace(m), Name: bindings.WorkName("CustomResourceDefinition", "", crd.GetName())}
			Expect(env.Host.Get(ctx, w, &workv1alpha1.Work{})).To(Succeed(), "the Work stays with its binding")
		}
		Consistently(in(ctx, crd, allMembers...)).WithContext(ctx).WithTimeout(3 * time.Second).Should(ConsistOf("member1", "member2"))
		Expect(in(ctx, two, allMembers...)()).To(ConsistOf("member1", "member2"))
	})

	It("delete the member CRDs, and their custom resources, with the CRD template", func(ctx SpecContext) {
		// A new policy claims the CRD again, and the member CRDs with it.
		Expect(env.Host.Create(ctx, clusterPolicy("e2e-crd", crdSelector, "member1", "member2"))).To(Succeed())
		appliedIn(ctx, crdBinding, "member1", "member2")

		Expect(env.Host.Delete(ctx, crd.DeepCopy())).To(Succeed())
		Eventually(in(ctx, crd, allMembers...)).WithContext(ctx).Should(BeEmpty())
		Expect(in(ctx, two, allMembers...)()).To(BeEmpty())
		Eventually(func() error { return env.Host.Get(ctx, client.ObjectKeyFromObject(crd), crd.DeepCopy()) }).
			WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func() error {
			return env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: detector.BindingName("Gadget", "two")}, &workv1alpha2.ResourceBinding{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		Expect(env.Host.Delete(ctx, clusterPolicy("e2e-crd", nil))).To(Succeed())
	})
})

var _ = Describe("Cluster-scoped kinds", Ordered, func() {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-cluster-kinds"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	priority := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-cluster-kinds"}, Value: 1000,
		Description: "propagated by a ClusterPropagationPolicy"}
	storage := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-cluster-kinds"}, Provisioner: "example.com/none",
		Parameters: map[string]string{"tier": "gold"}}
	// A namespace that is only selected by the policy, and one that is also opted in.
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-cpp-ns", Labels: map[string]string{"team": "blue"}}}
	optedIn := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-cpp-opted-in", Labels: map[string]string{"team": "green",
		wellknown.PropagationLabel: wellknown.PropagationEnabled}}}
	selectors := []policyv1alpha1.ResourceSelector{
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name},
		{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass", Name: priority.Name},
		{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass", Name: storage.Name},
		{APIVersion: "v1", Kind: "Namespace", Name: plain.Name},
		{APIVersion: "v1", Kind: "Namespace", Name: optedIn.Name},
	}

	It("ClusterRole, PriorityClass, StorageClass and Namespace propagate by a ClusterPropagationPolicy", func(ctx SpecContext) {
		// The opted-in namespace exists in member1 already, made by its ConfigMap's Work.
		Expect(env.Host.Create(ctx, optedIn.DeepCopy())).To(Succeed())
		Expect(env.Host.Create(ctx, policyTo(optedIn.Name, "cm", false, "member1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(optedIn.Name, "cm", "v1"))).To(Succeed())
		Eventually(memberValue(ctx, "member1", optedIn.Name, "cm")).WithContext(ctx).Should(Equal("v1"))

		for _, o := range []client.Object{role.DeepCopy(), priority.DeepCopy(), storage.DeepCopy(), plain.DeepCopy()} {
			Expect(env.Host.Create(ctx, o)).To(Succeed())
		}
		Expect(env.Host.Create(ctx, clusterPolicy("e2e-cluster-kinds", selectors, "member1", "member3"))).To(Succeed())

		for _, o := range []client.Object{role, priority, storage, plain, optedIn} {
			Eventually(in(ctx, o, allMembers...)).WithContext(ctx).Should(ConsistOf("member1", "member3"), "%T %s", o, o.GetName())
		}
		for _, m := range []string{"member1", "member3"} {
			r := &rbacv1.ClusterRole{}
			Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(role), r)).To(Succeed())
			Expect(r.Rules).To(Equal(role.Rules))
			p := &schedulingv1.PriorityClass{}
			Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(priority), p)).To(Succeed())
			Expect(p.Value).To(Equal(priority.Value))
			s := &storagev1.StorageClass{}
			Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(storage), s)).To(Succeed())
			Expect(s.Provisioner).To(Equal(storage.Provisioner))
			Expect(s.Parameters).To(Equal(storage.Parameters))
			// The namespaces are the templates', and managed: both land, the opted-in one too
			// although its ConfigMap's Work made it in member1 first.
			for _, n := range []*corev1.Namespace{plain, optedIn} {
				Eventually(func(g Gomega) map[string]string {
					got := &corev1.Namespace{}
					g.Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(n), got)).To(Succeed())
					return got.Labels
				}).WithContext(ctx).Should(And(HaveKeyWithValue("team", n.Labels["team"]),
					HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue)), "%s in %s", n.Name, m)
			}
		}
		for _, n := range []*corev1.Namespace{plain, optedIn} {
			appliedIn(ctx, &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: detector.BindingName("Namespace", n.Name)}},
				"member1", "member3")
		}
		// The opted-in namespace's templates go on as before.
		setValue(ctx, optedIn.Name, "cm", "v2")
		Eventually(memberValue(ctx, "member1", optedIn.Name, "cm")).WithContext(ctx).Should(Equal("v2"))
	})

	It("are deleted from the members with their templates", func(ctx SpecContext) {
		objs := []client.Object{role, priority, storage, plain, optedIn}
		for _, o := range objs {
			Expect(env.Host.Delete(ctx, o.DeepCopyObject().(client.Object))).To(Succeed())
		}
		for _, o := range objs {
			Eventually(in(ctx, o, allMembers...)).WithContext(ctx).Should(BeEmpty(), "%T %s", o, o.GetName())
		}
		Expect(env.Host.Delete(ctx, clusterPolicy("e2e-cluster-kinds", nil))).To(Succeed())
	})
})
