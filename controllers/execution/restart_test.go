package execution_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// deploymentPath is the member API path of a Deployment.
func deploymentPath(ns, name string) string {
	return "/apis/apps/v1/namespaces/" + ns + "/deployments/" + name
}

// appliedThenForgotten applies obj to member2 through a Work, waits until the Work reports
// it applied, and has the controller forget the apply, as a restart does. It returns the Work.
func appliedThenForgotten(ctx context.Context, obj client.Object) *workv1alpha1.Work {
	GinkgoHelper()
	w := createWork(ctx, "member2", obj)
	env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
	Eventually(func(g Gomega) { env.Get(ctx, g, w); g.Expect(w.Status.ManifestStatuses).NotTo(BeEmpty()) }).WithContext(ctx).Should(Succeed())
	reconciler.ForgetApplied()
	return w
}

// patchInMember changes obj's member object in member2 as owner, by a merge patch.
func patchInMember[T client.Object](ctx context.Context, obj T, owner string, change func(T)) {
	GinkgoHelper()
	cur := memberObject(ctx, Default, "member2", obj)
	patch := client.MergeFrom(cur.DeepCopyObject().(client.Object))
	change(cur)
	Expect(env.Members["member2"].Patch(ctx, cur, patch, client.FieldOwner(owner))).To(Succeed())
}

// After a restart the controller remembers no apply: the member objects' managedFields say
// whether each is as it last applied it.
var _ = Describe("Works looked at again after a restart", Ordered, func() {
	const ns = "exec-restart"

	It("are not applied again when their member object is as last applied", func(ctx SpecContext) {
		deploy := fleettest.Deployment(ns, "web", 2)
		deploy.Spec.Template.Annotations = map[string]string{"a": "b"}
		appliedThenForgotten(ctx, deploy)
		applied, unchanged := execution.Applies("member2", "applied"), execution.Applies("member2", "unchanged")
		// Someone adds an annotation of their own in the member: the object's event brings
		// the Work back, and what Flotilla applied is still as it was.
		patchInMember(ctx, deploy, "someone", func(d *appsv1.Deployment) {
			d.Annotations["someone"] = "else"
		})

		Eventually(func() float64 { return execution.Applies("member2", "unchanged") }).WithContext(ctx).Should(BeNumerically(">", unchanged))
		Expect(execution.Applies("member2", "applied")).To(Equal(applied))
		Expect(memberObject(ctx, Default, "member2", deploy).Annotations).To(HaveKeyWithValue("someone", "else"))
	})

	It("tell an object as last applied from the member cache, without reading it from the member", func(ctx SpecContext) {
		deploy := fleettest.Deployment(ns, "cached", 2)
		appliedThenForgotten(ctx, deploy)
		Expect(memberObject(ctx, Default, "member2", deploy).Annotations).To(HaveKey(wellknown.AppliedDigestAnnotation))
		reads := env.MemberRequests("member2", http.MethodGet, deploymentPath(ns, "cached"))
		applied, unchanged := execution.Applies("member2", "applied"), execution.Applies("member2", "unchanged")
		patchInMember(ctx, deploy, "someone", func(d *appsv1.Deployment) {
			d.Labels["someone"] = "else"
		})

		Eventually(func() float64 { return execution.Applies("member2", "unchanged") }).WithContext(ctx).Should(BeNumerically(">", unchanged))
		Expect(execution.Applies("member2", "applied")).To(Equal(applied))
		Expect(env.MemberRequests("member2", http.MethodGet, deploymentPath(ns, "cached"))).To(Equal(reads),
			"the member cache's copy carries the applied digest and the digest of the fields Flotilla owns")
	})

	It("put back a field someone changed in the member, though the applied digest still matches", func(ctx SpecContext) {
		deploy := fleettest.Deployment(ns, "scaled", 2)
		appliedThenForgotten(ctx, deploy)
		patchInMember(ctx, deploy, "kubectl-scale", func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr.To[int32](5)
		})

		Eventually(func(g Gomega) int32 { return *memberObject(ctx, g, "member2", deploy).Spec.Replicas }).WithContext(ctx).Should(Equal(int32(2)))
	})

	It("are not applied again for the applied digest alone, when their member object has none (applied before it)", func(ctx SpecContext) {
		cm := fleettest.ConfigMap(ns, "before-digest", map[string]string{"k": "v"})
		appliedThenForgotten(ctx, cm)
		applied, unchanged := execution.Applies("member2", "applied"), execution.Applies("member2", "unchanged")
		// As an object an earlier Flotilla applied: no digest, and none among the fields
		// "flotilla" owns.
		patchInMember(ctx, cm, "someone", func(c *corev1.ConfigMap) {
			delete(c.Annotations, wellknown.AppliedDigestAnnotation)
		})

		Eventually(func() float64 { return execution.Applies("member2", "unchanged") }).WithContext(ctx).Should(BeNumerically(">", unchanged))
		Expect(execution.Applies("member2", "applied")).To(Equal(applied))
		Expect(memberObject(ctx, Default, "member2", cm).Annotations).NotTo(HaveKey(wellknown.AppliedDigestAnnotation))
	})

	It("put back what someone changed in the member while the manager was down", func(ctx SpecContext) {
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v", "l": "w"})
		appliedThenForgotten(ctx, cm)
		patchInMember(ctx, cm, "kubectl-edit", func(c *corev1.ConfigMap) {
			c.Data = map[string]string{"k": "changed by hand"} // l removed, k changed
		})

		Eventually(func(g Gomega) map[string]string { return memberObject(ctx, g, "member2", cm).Data }).
			WithContext(ctx).Should(Equal(map[string]string{"k": "v", "l": "w"}))
	})

	It("keep their condition while their member has failed fewer probes than the threshold", func(ctx SpecContext) {
		// As after a start, before the member answers its first probe: the member is
		// connected but not healthy, and its Cluster is still Ready.
		cm := fleettest.ConfigMap(ns, "blip", map[string]string{"k": "v"})
		w := createWork(ctx, "member2", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)

		var failing atomic.Bool
		env.OnMemberRequest(func(cluster string, req *http.Request) {
			if cluster == "member2" && req.URL.Path == "/readyz" && failing.Load() {
				time.Sleep(fleettest.ProbeTimeout + 500*time.Millisecond) // the probe times out
			}
		})
		failing.Store(true)
		Eventually(func() bool { return members.Status("member2").Healthy }).WithContext(ctx).Should(BeFalse())
		Expect(members.Status("member2").Down).To(BeFalse())

		By("bringing the Work back while the member is not healthy")
		patchInMember(ctx, cm, "someone", func(c *corev1.ConfigMap) { c.Annotations["someone"] = "else" })
		Consistently(func(g Gomega) {
			g.Expect(members.Status("member2").Down).To(BeFalse(), "the member went down: the spec's window is over")
			c := env.Applied(ctx, g, w)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "Applied: %s %s", c.Reason, c.Message)
		}).WithContext(ctx).WithTimeout(1500 * time.Millisecond).WithPolling(100 * time.Millisecond).Should(Succeed())
		failing.Store(false)
		Eventually(func() bool { return members.Status("member2").Healthy }).WithContext(ctx).Should(BeTrue())
	})
})

var _ = Describe("A Work checked after a start before its member cache has listed the kind", func() {
	It("waits for the member cache's first list instead of reading its object from the member", func(ctx SpecContext) {
		// PodTemplates are applied by no other spec: the member cache's first list of them in
		// member2 is held back until released.
		release := env.HoldMemberList("member2", "/api/v1/podtemplates")
		pt := &corev1.PodTemplate{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodTemplate"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "exec-check-waits", Name: "tmpl"},
			Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}}
		w := appliedThenForgotten(ctx, pt)

		// The Work's own requests, memory and wait are looked at, not member2's counters:
		// other Works of member2 are checked meanwhile when an earlier spec has just
		// reconnected it (their checks waited for the new connection's caches too).
		objectPath := "/api/v1/namespaces/exec-check-waits/podtemplates/tmpl"
		reads, patches := env.MemberRequests("member2", http.MethodGet, objectPath), env.MemberRequests("member2", http.MethodPatch, objectPath)
		notTouched := func(g Gomega) {
			g.Expect(env.MemberRequests("member2", http.MethodGet, objectPath)).To(Equal(reads), "reads of the object from the member")
			g.Expect(env.MemberRequests("member2", http.MethodPatch, objectPath)).To(Equal(patches), "applies of the object")
		}
		waited := execution.Applies("member2", "waited")
		By("checking the Work, as the Works' initial list does at a start")
		_, err := reconciler.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool { return reconciler.CheckWaits("member2", client.ObjectKeyFromObject(w)) }).WithContext(ctx).Should(BeTrue(), "the Work's check waits")
		Eventually(func() float64 { return execution.Applies("member2", "waited") }).WithContext(ctx).Should(BeNumerically(">", waited))
		Consistently(func(g Gomega) {
			notTouched(g)
			g.Expect(reconciler.RemembersApply(w.UID)).To(BeFalse(), "the Work was found unchanged or applied while its check waits")
			c := env.Applied(ctx, g, w)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "the condition stays while the check waits")
		}).WithContext(ctx).WithTimeout(time.Second).Should(Succeed())

		By("letting the member cache's first list answer")
		release()
		Eventually(func() bool { return reconciler.RemembersApply(w.UID) }).WithContext(ctx).Should(BeTrue(), "the Work checked once the kind synced")
		Expect(reconciler.CheckWaits("member2", client.ObjectKeyFromObject(w))).To(BeFalse())
		notTouched(Default) // told unchanged from the member cache
	})
})

var _ = Describe("A Work remembered as applied, looked at while a new member connection lists its kind", func() {
	It("waits for the list instead of applying it again", func(ctx SpecContext) {
		// ResourceQuotas are applied by no other spec: member2's first list of them on the
		// new connection is held back until released.
		rq := &corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "exec-reconnect-waits", Name: "quota"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}}
		w := createWork(ctx, "member2", rq)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Eventually(func() bool { return reconciler.RemembersApply(w.UID) }).WithContext(ctx).Should(BeTrue())

		DeferCleanup(backInSync, "member2") // after the release below (cleanups run last first)
		release := env.HoldMemberList("member2", "/api/v1/resourcequotas")
		objectPath := "/api/v1/namespaces/exec-reconnect-waits/resourcequotas/quota"
		reads, patches := env.MemberRequests("member2", http.MethodGet, objectPath), env.MemberRequests("member2", http.MethodPatch, objectPath)
		notTouched := func(g Gomega) {
			g.Expect(env.MemberRequests("member2", http.MethodGet, objectPath)).To(Equal(reads), "reads of the object from the member")
			g.Expect(env.MemberRequests("member2", http.MethodPatch, objectPath)).To(Equal(patches), "applies of the object")
		}

		By("dropping member2's connection: the cluster controller connects it again, and the connect event brings its Works back")
		members.Disconnect("member2")
		Eventually(func() bool { return reconciler.CheckWaits("member2", client.ObjectKeyFromObject(w)) }).WithContext(ctx).
			Should(BeTrue(), "the Work's look waits for the new connection's list")
		// Longer than a read of the member cache waits for a kind to sync (CacheSyncWait),
		// after which the Work was applied again.
		Consistently(func(g Gomega) {
			notTouched(g)
			c := env.Applied(ctx, g, w)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "the condition stays while the look waits")
		}).WithContext(ctx).WithTimeout(execution.CacheSyncWait + 2*time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("letting the new connection's list answer")
		release()
		Eventually(func() bool { return reconciler.CheckWaits("member2", client.ObjectKeyFromObject(w)) }).WithContext(ctx).Should(BeFalse())
		Consistently(notTouched).WithContext(ctx).WithTimeout(time.Second).Should(Succeed()) // told unchanged from the member cache
		Expect(reconciler.RemembersApply(w.UID)).To(BeTrue())
	})
})
