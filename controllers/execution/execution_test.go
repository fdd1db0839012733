package execution_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/internal/memberqueue"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// memberObject reads obj's namesake from the member into a new object of its type.
func memberObject[T client.Object](ctx context.Context, g Gomega, cluster string, obj T) T {
	out := obj.DeepCopyObject().(T)
	g.Expect(env.Members[cluster].Get(ctx, client.ObjectKeyFromObject(obj), out)).To(Succeed())
	return out
}

// memberGone reports whether obj's namesake is absent from the member.
func memberGone(ctx context.Context, cluster string, obj client.Object) func() bool {
	return fleettest.Gone(ctx, env.Members[cluster], obj)
}

// setManifest replaces the Work's manifest with obj and writes the Work.
func setManifest(ctx context.Context, w *workv1alpha1.Work, obj client.Object) {
	GinkgoHelper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	env.Get(ctx, Default, w)
	patch := client.MergeFrom(w.DeepCopy())
	fleettest.SetManifest(w, &unstructured.Unstructured{Object: u})
	Expect(env.Host.Patch(ctx, w, patch)).To(Succeed())
}

func createWork(ctx context.Context, cluster string, obj client.Object, mutate ...func(*workv1alpha1.Work)) *workv1alpha1.Work {
	GinkgoHelper()
	w := fleettest.Work(cluster, obj)
	for _, m := range mutate {
		m(w)
	}
	Expect(env.Host.Create(ctx, w)).To(Succeed())
	return w
}

func fieldManagers(obj client.Object) []string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		out = append(out, f.Manager+"/"+string(f.Operation))
	}
	return out
}

var _ = Describe("Applying Works", func() {
	It("applies the manifest to its member, creating the namespace, and reports Applied=True", func(ctx SpecContext) {
		ns := "exec-apply"
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v1"})
		w := createWork(ctx, "member1", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Expect(w.Status.ManifestStatuses).To(ConsistOf(HaveField("Identifier", workv1alpha1.ResourceIdentifier{
			Ordinal: 0, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: "cfg"})))

		Expect(env.Members["member1"].Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})).To(Succeed())
		got := memberObject(ctx, Default, "member1", cm)
		Expect(got.Data).To(Equal(map[string]string{"k": "v1"}))
		Expect(got.Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))
		Expect(got.Annotations).To(HaveKeyWithValue(wellknown.WorkNameAnnotation, w.Name))
		Expect(fieldManagers(got)).To(ContainElement(wellknown.FieldManager + "/Apply"))
		Expect(memberGone(ctx, "member2", cm)()).To(BeTrue(), "only the Work's own member gets it")

		By("applying a new manifest")
		cm.Data = map[string]string{"k": "v2"}
		setManifest(ctx, w, cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Eventually(func(g Gomega) map[string]string { return memberObject(ctx, g, "member1", cm).Data }).
			WithContext(ctx).Should(Equal(map[string]string{"k": "v2"}))
	})

	It("leaves an object someone else manages alone (Applied=False, Conflict) until told to overwrite it", func(ctx SpecContext) {
		ns := "exec-conflict"
		Expect(env.Members["member1"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		theirs := fleettest.ConfigMap(ns, "taken", map[string]string{"owner": "someone"})
		Expect(env.Members["member1"].Create(ctx, theirs.DeepCopy())).To(Succeed())

		ours := fleettest.ConfigMap(ns, "taken", map[string]string{"owner": "flotilla"})
		w := createWork(ctx, "member1", ours)
		c := env.ExpectApplied(ctx, w, metav1.ConditionFalse, wellknown.ReasonConflict)
		Expect(c.Message).To(And(ContainSubstring("not managed by Flotilla"), ContainSubstring(wellknown.ConflictResolutionAnnotation)))
		Eventually(func(g Gomega) []string { return env.EventReasons(ctx, g, w) }).WithContext(ctx).
			Should(ContainElement(wellknown.EventReasonSyncWorkloadFailed))
		got := memberObject(ctx, Default, "member1", theirs)
		Expect(got.Data).To(Equal(theirs.Data))
		Expect(got.Labels).NotTo(HaveKey(wellknown.ManagedLabel))

		By("overwriting once the manifest says so")
		ours.Annotations = map[string]string{wellknown.ConflictResolutionAnnotation: wellknown.ConflictResolutionOverwrite}
		setManifest(ctx, w, ours)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		got = memberObject(ctx, Default, "member1", theirs)
		Expect(got.Data).To(Equal(ours.Data))
		Expect(got.Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))
	})

	It("puts back what someone changed in the member", func(ctx SpecContext) {
		ns := "exec-drift"
		deploy := fleettest.Deployment(ns, "web", 2)
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		wd := createWork(ctx, "member2", deploy)
		wc := createWork(ctx, "member2", cm)
		env.ExpectApplied(ctx, wd, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		env.ExpectApplied(ctx, wc, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)

		// A kind with a generation (the spec changed) and one without (any change).
		d := memberObject(ctx, Default, "member2", deploy)
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To[int32](5)
		Expect(env.Members["member2"].Patch(ctx, d, patch)).To(Succeed())
		c := memberObject(ctx, Default, "member2", cm)
		cpatch := client.MergeFrom(c.DeepCopy())
		c.Data = map[string]string{"k": "changed by hand"}
		Expect(env.Members["member2"].Patch(ctx, c, cpatch)).To(Succeed())

		Eventually(func(g Gomega) *int32 { return memberObject(ctx, g, "member2", deploy).Spec.Replicas }).
			WithContext(ctx).Should(HaveValue(Equal(int32(2))))
		Eventually(func(g Gomega) map[string]string { return memberObject(ctx, g, "member2", cm).Data }).
			WithContext(ctx).Should(Equal(map[string]string{"k": "v"}))
	})

	It("puts back replicas scaled in the member, unless a member HPA scales the object", func(ctx SpecContext) {
		ns := "exec-scale"
		deploy := fleettest.Deployment(ns, "web", 2)
		w := createWork(ctx, "member1", deploy)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		replicas := func(g Gomega) *int32 { return memberObject(ctx, g, "member1", deploy).Spec.Replicas }
		// As `kubectl scale` and the HPA controller do: through the scale subresource.
		scale := func(n int32, manager string) {
			GinkgoHelper()
			s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
			d := memberObject(ctx, Default, "member1", deploy)
			Expect(env.Members["member1"].SubResource("scale").Update(ctx, d, client.WithSubResourceBody(s), client.FieldOwner(manager))).To(Succeed())
		}

		By("undoing a kubectl scale: nothing in the member owns the replicas")
		scale(5, "kubectl")
		Eventually(replicas).WithContext(ctx).Should(HaveValue(Equal(int32(2))))

		By("keeping the replicas a member HPA sets, while template edits still arrive")
		hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-hpa"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr.To[int32](4), MaxReplicas: 6,
			}}
		Expect(env.Members["member1"].Create(ctx, hpa)).To(Succeed())
		scale(4, "kube-controller-manager")
		deploy.Spec.Template.Annotations = map[string]string{"edit": "2"}
		setManifest(ctx, w, deploy)
		Eventually(func(g Gomega) string {
			return memberObject(ctx, g, "member1", deploy).Spec.Template.Annotations["edit"]
		}).
			WithContext(ctx).Should(Equal("2"))
		Consistently(replicas).WithContext(ctx).WithTimeout(3 * time.Second).Should(HaveValue(Equal(int32(4))))

		By("handing the replicas back to the template once the HPA is deleted")
		Expect(env.Members["member1"].Delete(ctx, hpa)).To(Succeed())
		Eventually(replicas).WithContext(ctx).Should(HaveValue(Equal(int32(2))))
	})

	It("adopts in place the objects Karmada made for a migrated template, and no others", func(ctx SpecContext) {
		ns := "exec-adopt"
		Expect(env.Members["member1"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		// What Karmada leaves in a member: its labels, annotations and field manager.
		leftover := func(name, templateUID string) *appsv1.Deployment {
			d := fleettest.Deployment(ns, name, 2)
			d.Labels = map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue,
				"work.karmada.io/permanent-id": "w-" + name, "resourcebinding.karmada.io/permanent-id": "rb-" + name,
				wellknown.PropagationPolicyPermanentIDLabel: "karmada-pp"}
			d.Annotations = map[string]string{wellknown.ResourceTemplateUIDAnnotation: templateUID,
				wellknown.WorkNamespaceAnnotation: "karmada-es-member1", wellknown.WorkNameAnnotation: name + "-5d8f",
				"resourcetemplate.karmada.io/managed-labels": "app"}
			Expect(env.Members["member1"].Create(ctx, d.DeepCopy(), client.FieldOwner("karmada-controller-manager"))).To(Succeed())
			return memberObject(ctx, Default, "member1", d)
		}
		before := leftover("migrated", "karmada-uid-1")
		other := leftover("not-migrated", "karmada-uid-2")

		migrated := fleettest.Deployment(ns, "migrated", 2)
		migrated.Annotations = map[string]string{wellknown.AdoptKarmadaUIDAnnotation: "karmada-uid-1"}
		w := createWork(ctx, "member1", migrated)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Eventually(func(g Gomega) []string { return env.EventReasons(ctx, g, w) }).WithContext(ctx).Should(ContainElement(wellknown.EventReasonAdopted))
		Eventually(func(g Gomega) {
			got := memberObject(ctx, g, "member1", before)
			g.Expect(got.UID).To(Equal(before.UID), "the same object")
			// (Its generation moves: a Deployment's does with its annotations.)
			g.Expect(got.Spec).To(Equal(before.Spec), "its spec did not change: no rollout")
			g.Expect(got.Annotations).To(HaveKey(wellknown.HostIDAnnotation))
			g.Expect(got.Labels).NotTo(HaveKey("work.karmada.io/permanent-id"))
			g.Expect(got.Labels).NotTo(HaveKey("resourcebinding.karmada.io/permanent-id"))
			g.Expect(got.Annotations).NotTo(HaveKey("resourcetemplate.karmada.io/managed-labels"))
			g.Expect(fieldManagers(got)).NotTo(ContainElement(HavePrefix("karmada-")))
			g.Expect(fieldManagers(got)).To(ContainElement(wellknown.FieldManager + "/Apply"))
		}).WithContext(ctx).Should(Succeed())

		By("leaving an object Karmada made for another template a Conflict")
		notMigrated := fleettest.Deployment(ns, "not-migrated", 2)
		notMigrated.Annotations = map[string]string{wellknown.AdoptKarmadaUIDAnnotation: "karmada-uid-1"}
		wo := createWork(ctx, "member1", notMigrated)
		c := env.ExpectApplied(ctx, wo, metav1.ConditionFalse, wellknown.ReasonConflict)
		Expect(c.Message).To(ContainSubstring("another control plane"))
		Expect(memberObject(ctx, Default, "member1", other).Labels).To(HaveKey("work.karmada.io/permanent-id"))
	})

	It("holds a suspended Work back, and applies it once dispatching resumes", func(ctx SpecContext) {
		ns := "exec-suspend"
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		w := createWork(ctx, "member1", cm, func(w *workv1alpha1.Work) { w.Spec.SuspendDispatching = ptr.To(true) })
		env.ExpectApplied(ctx, w, metav1.ConditionFalse, "DispatchingSuspended")
		Expect(memberGone(ctx, "member1", cm)()).To(BeTrue())

		patch := client.MergeFrom(w.DeepCopy())
		w.Spec.SuspendDispatching = nil
		Expect(env.Host.Patch(ctx, w, patch)).To(Succeed())
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Expect(memberGone(ctx, "member1", cm)()).To(BeFalse())
	})
})

var _ = Describe("A create-only apply", func() {
	path := func(ns, name string) string { return "/api/v1/namespaces/" + ns + "/configmaps/" + name }

	It("creates a new member object with its apply alone: no read first", func(ctx SpecContext) {
		ns := "exec-create-only"
		By("waiting for the member cache to have synced ConfigMaps (a Work of one starts its watch)")
		env.ExpectApplied(ctx, createWork(ctx, "member1", fleettest.ConfigMap(ns, "first", nil)), metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Eventually(func() error {
			m, err := members.Get("member1")
			if err != nil {
				return err
			}
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("v1")
			list.SetKind("ConfigMapList")
			return m.NoWait().List(ctx, list)
		}).WithContext(ctx).Should(Succeed())

		cm := fleettest.ConfigMap(ns, "new", map[string]string{"k": "v"})
		w := createWork(ctx, "member1", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Expect(memberObject(ctx, Default, "member1", cm).Data).To(Equal(cm.Data))
		Expect(env.MemberRequests("member1", http.MethodPatch, path(ns, "new"))).To(Equal(1))
		Expect(env.MemberRequests("member1", http.MethodGet, path(ns, "new"))).To(BeZero(),
			"an object the member cache does not hold is applied create-only, not read first")
	})

	It("does not take over an object someone else makes between the look and the apply", func(ctx SpecContext) {
		ns := "exec-create-race"
		Expect(env.Members["member1"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		theirs := fleettest.ConfigMap(ns, "raced", map[string]string{"owner": "someone"})
		var made sync.Once
		env.OnMemberRequest(func(cluster string, req *http.Request) {
			if cluster == "member1" && req.Method == http.MethodPatch && req.URL.Path == path(ns, "raced") {
				// Someone makes the object just before the controller's first apply of it.
				made.Do(func() { Expect(env.Members["member1"].Create(context.Background(), theirs.DeepCopy())).To(Succeed()) })
			}
		})
		w := createWork(ctx, "member1", fleettest.ConfigMap(ns, "raced", map[string]string{"owner": "flotilla"}))
		c := env.ExpectApplied(ctx, w, metav1.ConditionFalse, wellknown.ReasonConflict)
		Expect(c.Message).To(ContainSubstring("not managed by Flotilla"))
		got := memberObject(ctx, Default, "member1", theirs)
		Expect(got.Data).To(Equal(theirs.Data))
		Expect(got.Labels).NotTo(HaveKey(wellknown.ManagedLabel))
		Expect(fieldManagers(got)).NotTo(ContainElement(wellknown.FieldManager + "/Apply"))
	})

	It("applies a new object at once while the member cache has not synced its kind", func(ctx SpecContext) {
		// The member cache's first list of ServiceAccounts (no other spec applies one) does
		// not answer until the spec ends, as a busy member's list of thousands of objects
		// takes seconds after a start.
		env.HoldMemberList("member1", "/api/v1/serviceaccounts")
		sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "exec-unsynced", Name: "robot"}}
		w := createWork(ctx, "member1", sa)
		// Without the cache's answer, the object is read from the member and applied, well
		// before a read of the cache would have given up waiting for it.
		Eventually(memberGone(ctx, "member1", sa)).WithContext(ctx).WithTimeout(execution.CacheSyncWait - time.Second).
			WithPolling(100 * time.Millisecond).Should(BeFalse())
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
	})

	It("puts back an object deleted before the member cache's first list of its kind answered", func(ctx SpecContext) {
		// The member cache's first list of LimitRanges (no other spec applies one) is held
		// back: the Work is applied, and its object read, from the member itself.
		open := env.HoldMemberList("member1", "/api/v1/limitranges")
		lr := &corev1.LimitRange{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "exec-blind", Name: "limits"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
		w := createWork(ctx, "member1", lr)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)

		// Someone deletes it before the list answers: the list does not hold it, and no event
		// says it went.
		Expect(env.Members["member1"].Delete(ctx, lr.DeepCopy())).To(Succeed())
		open()
		Eventually(memberGone(ctx, "member1", lr)).WithContext(ctx).Should(BeFalse(), "the Work puts it back")
	})

	It("updates an object of ours that the member cache does not hold yet", func(ctx SpecContext) {
		ns := "exec-create-ours"
		Expect(env.Members["member1"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		ours := fleettest.ConfigMap(ns, "ours", map[string]string{"k": "v"})
		ours.Annotations = map[string]string{wellknown.ResourceTemplateUIDAnnotation: "template-uid-1"}
		// Made for the same template just before the controller's first apply (a previous
		// apply whose answer was lost): the cache has not seen it, the create-only apply
		// fails, and the object is read and updated.
		earlier := ours.DeepCopy()
		earlier.Labels = map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue}
		earlier.Data = map[string]string{"k": "old"}
		var made sync.Once
		env.OnMemberRequest(func(cluster string, req *http.Request) {
			if cluster == "member1" && req.Method == http.MethodPatch && req.URL.Path == path(ns, "ours") {
				made.Do(func() { Expect(env.Members["member1"].Create(context.Background(), earlier)).To(Succeed()) })
			}
		})
		w := createWork(ctx, "member1", ours)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Expect(memberObject(ctx, Default, "member1", ours).Data).To(Equal(ours.Data))
		Expect(env.MemberRequests("member1", http.MethodPatch, path(ns, "ours"))).To(Equal(2), "the create-only apply, then the apply")
	})
})

var _ = Describe("Deleting Works", func() {
	It("deletes the member object with its Work", func(ctx SpecContext) {
		ns := "exec-delete"
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		w := createWork(ctx, "member1", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)

		Expect(env.Host.Delete(ctx, w)).To(Succeed())
		Eventually(memberGone(ctx, "member1", cm)).WithContext(ctx).Should(BeTrue())
		Eventually(fleettest.Gone(ctx, env.Host, w)).WithContext(ctx).Should(BeTrue())
	})

	// As Karmada does: the object stays, and is the member's. Until session 17 it stayed
	// labelled as managed, and a template of the same name later took it over unasked.
	It("releases the member object of a Work that preserves resources on deletion", func(ctx SpecContext) {
		ns := "exec-preserve"
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		cm.Labels = map[string]string{"app": "cfg"}
		w := createWork(ctx, "member1", cm, func(w *workv1alpha1.Work) { w.Spec.PreserveResourcesOnDeletion = ptr.To(true) })
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Expect(memberObject(ctx, Default, "member1", cm).Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))

		Expect(env.Host.Delete(ctx, w)).To(Succeed())
		Eventually(fleettest.Gone(ctx, env.Host, w)).WithContext(ctx).Should(BeTrue())
		got := memberObject(ctx, Default, "member1", cm)
		Expect(got.Data).To(Equal(map[string]string{"k": "v"}))
		Expect(got.Labels).To(Equal(map[string]string{"app": "cfg"}), "only the template's own labels stay")
		for _, k := range []string{wellknown.HostIDAnnotation, wellknown.WorkNameAnnotation, wellknown.WorkNamespaceAnnotation,
			wellknown.ResourceTemplateUIDAnnotation, wellknown.ResourceTemplateGenerationAnnotation} {
			Expect(got.Annotations).NotTo(HaveKey(k))
		}
		Consistently(memberGone(ctx, "member1", cm)).WithContext(ctx).Should(BeFalse())

		By("a new Work of the same object does not take the released object over")
		w2 := createWork(ctx, "member1", cm)
		env.ExpectApplied(ctx, w2, metav1.ConditionFalse, wellknown.ReasonConflict)
		Expect(env.Host.Delete(ctx, w2)).To(Succeed())
		Eventually(fleettest.Gone(ctx, env.Host, w2)).WithContext(ctx).Should(BeTrue())
		Expect(memberGone(ctx, "member1", cm)()).To(BeFalse(), "a conflicting Work deletes nothing")
	})

	It("keeps the member object managed when the preserving Work says its template stays", func(ctx SpecContext) {
		ns := "exec-preserve-managed"
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		w := createWork(ctx, "member1", cm, func(w *workv1alpha1.Work) {
			w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
			metav1.SetMetaDataAnnotation(&w.ObjectMeta, wellknown.KeepManagedAnnotation, "true")
		})
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		before := memberObject(ctx, Default, "member1", cm)

		Expect(env.Host.Delete(ctx, w)).To(Succeed())
		Eventually(fleettest.Gone(ctx, env.Host, w)).WithContext(ctx).Should(BeTrue())
		got := memberObject(ctx, Default, "member1", cm)
		Expect(got.Labels).To(Equal(before.Labels))
		Expect(got.Annotations).To(Equal(before.Annotations))

		By("the template's next Work takes it back")
		w2 := createWork(ctx, "member1", cm)
		env.ExpectApplied(ctx, w2, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
	})

	It("leaves a member object that someone else took over", func(ctx SpecContext) {
		ns := "exec-taken-over"
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		w := createWork(ctx, "member2", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		// Someone removes the managed label: the object is theirs now.
		got := memberObject(ctx, Default, "member2", cm)
		patch := client.MergeFrom(got.DeepCopy())
		delete(got.Labels, wellknown.ManagedLabel)
		Expect(env.Members["member2"].Patch(ctx, got, patch)).To(Succeed())

		Expect(env.Host.Delete(ctx, w)).To(Succeed())
		Eventually(fleettest.Gone(ctx, env.Host, w)).WithContext(ctx).Should(BeTrue())
		Expect(memberGone(ctx, "member2", cm)()).To(BeFalse())
	})
})

// backInSync waits, after a spec restarted a member's apiserver, until its Cluster is Ready
// and the manager's new connection to it has synced the kinds the other specs apply: a spec
// that runs next then does not start while that connection's first lists are still running
// (a change made in the member before them shows only when they answer).
func backInSync(ctx context.Context, name string) {
	GinkgoHelper()
	env.WaitClustersReady(ctx, name)
	start := time.Now()
	for _, gvk := range []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap"), appsv1.SchemeGroupVersion.WithKind("Deployment")} {
		Eventually(func(g Gomega) {
			m, err := members.Get(name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.Synced(ctx, gvk)).To(BeTrue(), "%s's cache has synced %s", name, gvk.Kind)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	}
	GinkgoWriter.Printf("%s's caches synced %s after its Cluster was Ready again\n", name, time.Since(start))
}

var _ = Describe("A member that stops answering", Ordered, func() {
	var w *workv1alpha1.Work
	var cm *corev1.ConfigMap

	BeforeAll(func(ctx SpecContext) {
		cm = fleettest.ConfigMap("exec-unreachable", "cfg", map[string]string{"k": "v"})
		w = createWork(ctx, "member2", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		m := env.Fleet.Member("member2")
		Expect(m.StopAPIServer()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			if m.Healthy(ctx) != nil {
				Expect(m.StartAPIServer(ctx)).To(Succeed())
			}
			backInSync(ctx, "member2")
		})
	})

	It("has its Works marked Applied=Unknown, and nothing deleted", func(ctx SpecContext) {
		c := env.ExpectApplied(ctx, w, metav1.ConditionUnknown, wellknown.ReasonClusterUnreachable)
		Expect(c.Message).To(ContainSubstring("not connected"))

		Expect(env.Fleet.Member("member2").StartAPIServer(ctx)).To(Succeed())
		env.WaitClustersReady(ctx, "member2")
		Expect(memberGone(ctx, "member2", cm)()).To(BeFalse())
	})

	// Regression (issue 9): when the member came back, the "already up to date" shortcut
	// returned before repairing the Applied=Unknown condition.
	It("has them marked Applied=True again once it is back", func(ctx SpecContext) {
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
	})
})

var _ = Describe("A member that comes back while the Work cache lags", Ordered, func() {
	var w *workv1alpha1.Work
	var applied *workv1alpha1.Work

	BeforeAll(func(ctx SpecContext) {
		cm := fleettest.ConfigMap("exec-stale", "cfg", map[string]string{"k": "v"})
		w = createWork(ctx, "member1", cm)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		applied = &workv1alpha1.Work{}
		env.Get(ctx, Default, w)
		w.DeepCopyInto(applied)
	})

	// Regression (issue 16): the controller wrote Applied=Unknown while the member was down;
	// when it came back, its cached Work still showed the Applied=True from before, so the
	// merge patch of Applied=True against that copy was empty, and the condition it
	// remembered writing (True) kept it from ever writing it again: the Work stayed Unknown.
	It("has its Work marked Applied=True again, though its cached copy still shows True", func(ctx SpecContext) {
		m := env.Fleet.Member("member1")
		Expect(m.StopAPIServer()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			stale.unpin(w)
			if m.Healthy(ctx) != nil {
				Expect(m.StartAPIServer(ctx)).To(Succeed())
			}
			backInSync(ctx, "member1")
		})
		env.ExpectApplied(ctx, w, metav1.ConditionUnknown, wellknown.ReasonClusterUnreachable)

		// The controller now reads the Work as it was before the member went down.
		stale.pin(applied)
		Expect(m.StartAPIServer(ctx)).To(Succeed())
		env.WaitClustersReady(ctx, "member1")
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
	})
})

var _ = Describe("Works created without the execution finalizer", func() {
	// Regression (issue 9): a Work created without the finalizer karmada.io/execution-controller
	// got it added by a patch that changes no generation, so the predicate dropped the update
	// and the Work was not applied until some other event.
	It("are applied all the same", func(ctx SpecContext) {
		cm := fleettest.ConfigMap("exec-no-finalizer", "cfg", map[string]string{"k": "v"})
		w := createWork(ctx, "member1", cm, func(w *workv1alpha1.Work) { w.Finalizers = nil })
		Eventually(func(g Gomega) []string {
			env.Get(ctx, g, w)
			return w.Finalizers
		}).WithContext(ctx).Should(ContainElement(wellknown.ExecutionControllerFinalizer))
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Expect(memberGone(ctx, "member1", cm)()).To(BeFalse())
	})
})

// warnings returns the Warning events regarding the Work.
func warnings(ctx context.Context, g Gomega, w *workv1alpha1.Work) []eventsv1.Event {
	var out []eventsv1.Event
	for _, ev := range env.Events(ctx, g, w) {
		if ev.Type == corev1.EventTypeWarning {
			out = append(out, ev)
		}
	}
	return out
}

var _ = Describe("Custom resources whose CRD the member does not serve", Ordered, func() {
	const ns = "exec-crd"
	typed := fleettest.CRD("exec.flotilla.test", "Widget")
	crd := fleettest.AsUnstructured(typed)
	cr := fleettest.CustomResource(typed, ns, "w1", map[string]any{"size": int64(3)})
	var crWork, crdWork *workv1alpha1.Work

	It("wait with Applied=False (KindNotServed) and one Warning event, not one per retry", func(ctx SpecContext) {
		crWork = createWork(ctx, "member1", cr)
		c := env.ExpectApplied(ctx, crWork, metav1.ConditionFalse, execution.ReasonKindNotServed)
		Expect(c.Message).To(Equal("exec.flotilla.test/v1 Widget is not served by member1 yet; waiting for its CRD"))
		Eventually(func(g Gomega) []eventsv1.Event { return warnings(ctx, g, crWork) }).WithContext(ctx).Should(HaveLen(1))
		// Retries come after 1 s, then 2 s: a Warning per retry would make the event a series
		// (the recorder writes the second occurrence as series.count 2).
		Consistently(func(g Gomega) {
			evs := warnings(ctx, g, crWork)
			g.Expect(evs).To(HaveLen(1))
			g.Expect(evs[0].Series).To(BeNil())
			g.Expect(evs[0].Note).To(Equal(c.Message))
		}).WithContext(ctx).WithTimeout(3500 * time.Millisecond).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(memberGone(ctx, "member1", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})()).To(BeTrue(),
			"nothing is written to the member while the kind is not served")
	})

	It("are applied once their CRD, sent as a Work too, is served", func(ctx SpecContext) {
		crdWork = createWork(ctx, "member1", crd)
		env.ExpectApplied(ctx, crdWork, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		env.ExpectApplied(ctx, crWork, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		got := memberObject(ctx, Default, "member1", cr)
		Expect(got.Object["spec"]).To(Equal(map[string]any{"size": int64(3)}))
	})

	It("wait again when their CRD is deleted from the member, and come back with it", func(ctx SpecContext) {
		Expect(env.Host.Delete(ctx, crdWork)).To(Succeed())
		Eventually(memberGone(ctx, "member1", crd)).WithContext(ctx).Should(BeTrue())
		Eventually(fleettest.Gone(ctx, env.Host, crdWork)).WithContext(ctx).Should(BeTrue())
		env.ExpectApplied(ctx, crWork, metav1.ConditionFalse, execution.ReasonKindNotServed)

		crdWork = createWork(ctx, "member1", crd)
		env.ExpectApplied(ctx, crWork, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		Expect(memberGone(ctx, "member1", cr)()).To(BeFalse())
	})

	It("are deleted with their Work even when the member no longer serves their kind", func(ctx SpecContext) {
		Expect(env.Host.Delete(ctx, crdWork)).To(Succeed())
		Eventually(fleettest.Gone(ctx, env.Host, crdWork)).WithContext(ctx).Should(BeTrue())
		Expect(env.Host.Delete(ctx, crWork)).To(Succeed())
		Eventually(fleettest.Gone(ctx, env.Host, crWork)).WithContext(ctx).Should(BeTrue())
		Expect(memberGone(ctx, "member1", crd)()).To(BeTrue())
	})
})

var _ = Describe("A member that cannot list a kind", func() {
	It("applies its other Works while the Works of that kind fail", func(ctx SpecContext) {
		const ns = "exec-stuck"
		mc := env.Members["member2"]
		typed := fleettest.BrokenConversionCRD("stuck.flotilla.test", "Gadget")
		crd := fleettest.AsUnstructured(typed)
		Expect(mc.Create(ctx, crd)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(mc.Delete(ctx, crd))).To(Succeed()) })
		Expect(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		// Stored in v1 and managed: the member cache's list of v2 has to convert it, and fails.
		stored := fleettest.CustomResource(typed, ns, "stored", map[string]any{"size": int64(1)})
		stored.SetLabels(map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue})
		Eventually(func() error { return mc.Create(ctx, stored) }).WithContext(ctx).Should(Succeed()) // once Established

		By("as many Works of the kind in v2 as the member has workers, then a ConfigMap's")
		var stuck []*workv1alpha1.Work
		for i := range memberqueue.DefaultWorkers {
			cr := fleettest.CustomResource(typed, ns, fmt.Sprintf("g%d", i), map[string]any{"size": int64(i)})
			cr.SetAPIVersion("stuck.flotilla.test/v2")
			stuck = append(stuck, createWork(ctx, "member2", cr))
		}
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "beside-the-stuck"}, Data: map[string]string{"k": "v"}}
		w := createWork(ctx, "member2", cm)
		for _, s := range append(stuck, w) {
			DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, s))).To(Succeed()) })
		}

		// Before, each Work of the kind held a worker until memberqueue's timeout (a minute),
		// waiting for the member cache to sync a kind it never syncs.
		Eventually(func(g Gomega) {
			c := env.Applied(ctx, g, w)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		for _, s := range stuck {
			c := env.ExpectApplied(ctx, s, metav1.ConditionFalse, wellknown.ReasonAppliedFailed)
			Expect(c.Message).To(ContainSubstring("conversion webhook"))
		}
	})
})

var _ = Describe("Works the member refuses to the credential", func() {
	It("say which right is missing and how to give it (Applied=False)", func(ctx SpecContext) {
		role := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "exec-debugger"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}}}
		w := createWork(ctx, "member1", role)
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, w))).To(Succeed()) })
		c := env.ExpectApplied(ctx, w, metav1.ConditionFalse, wellknown.ReasonAppliedFailed)
		Expect(c.Message).To(And(
			ContainSubstring("member1's credential may not grant rights it does not hold; join it with --allow-rbac-escalation to propagate this ClusterRole"),
			ContainSubstring("pods/exec")))
		Expect(memberGone(ctx, "member1", role)()).To(BeTrue())

		cm := createWork(ctx, "member1", fleettest.ConfigMap(metav1.NamespaceSystem, "exec-takeover", map[string]string{"k": "v"}))
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, cm))).To(Succeed()) })
		c = env.ExpectApplied(ctx, cm, metav1.ConditionFalse, wellknown.ReasonAppliedFailed)
		Expect(c.Message).To(ContainSubstring("may not write in the namespaces kube-system"))
	})
})

var _ = Describe("Works of a Namespace", func() {
	namespace := func(name string) *corev1.Namespace {
		return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "blue"}}}
	}

	It("take over the namespace made for the objects of other Works", func(ctx SpecContext) {
		ns := namespace("exec-ns-made")
		cm := createWork(ctx, "member2", fleettest.ConfigMap(ns.Name, "cfg", map[string]string{"k": "v"}))
		env.ExpectApplied(ctx, cm, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		made := memberObject(ctx, Default, "member2", ns)
		Expect(made.Labels).NotTo(HaveKey(wellknown.ManagedLabel), "a namespace made for a Work's objects is no Work's")

		w := createWork(ctx, "member2", ns)
		env.ExpectApplied(ctx, w, metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful)
		got := memberObject(ctx, Default, "member2", ns)
		Expect(got.UID).To(Equal(made.UID))
		Expect(got.Labels).To(HaveKeyWithValue("team", "blue"))
		Expect(got.Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))
	})

	It("leave a namespace someone else made alone (Conflict)", func(ctx SpecContext) {
		ns := namespace("exec-ns-theirs")
		Expect(env.Members["member2"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}})).To(Succeed())
		w := createWork(ctx, "member2", ns)
		env.ExpectApplied(ctx, w, metav1.ConditionFalse, wellknown.ReasonConflict)
		Expect(memberObject(ctx, Default, "member2", ns).Labels).NotTo(HaveKey("team"))
	})
})
