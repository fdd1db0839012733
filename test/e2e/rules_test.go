package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// templateNamespace creates an opted-in namespace for one test, and waits until the host
// holds its templates.
func templateNamespace(ctx context.Context, name string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}}}
	Expect(env.Host.Create(ctx, ns)).To(Succeed())
	awaitHold(ctx, name)
	return name
}

// awaitHold waits until the apiserver enforces the host hold in the opted-in namespace ns,
// as an admin would check before creating templates there: it sees a namespace's new label
// a moment after it is written, and a template created before that escapes the hold (the
// host's Deployment controller writes its status, under its own field manager).
func awaitHold(ctx context.Context, ns string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		err := env.Host.Create(ctx, pod, client.DryRunAll)
		g.Expect(err).To(HaveOccurred(), "the hold does not deny Pods in %s yet", ns)
		g.Expect(err.Error()).To(ContainSubstring(wellknown.PropagationLabel))
	}).WithContext(ctx).WithPolling(100 * time.Millisecond).Should(Succeed())
}

func configMap(ns, name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"key": value}}
}

// policyTo propagates ConfigMaps of the namespace to the named clusters.
func policyTo(ns, name string, preserve bool, clusters ...string) *policyv1alpha1.PropagationPolicy {
	pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
			Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters}},
		}}
	if preserve {
		pp.Spec.PreserveResourcesOnDeletion = ptr.To(true)
	}
	return pp
}

// eventuallyConflict waits until the Work of the ConfigMap template ns/name for member is
// Applied=False with reason Conflict and a message containing why.
func eventuallyConflict(ctx context.Context, member, ns, name, why string) {
	GinkgoHelper()
	work := types.NamespacedName{Namespace: wellknown.ExecutionNamespace(member), Name: bindings.WorkName("ConfigMap", ns, name)}
	Eventually(func(g Gomega) {
		w := &workv1alpha1.Work{}
		g.Expect(env.Host.Get(ctx, work, w)).To(Succeed())
		c := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(wellknown.ReasonConflict))
		g.Expect(c.Message).To(ContainSubstring(why))
	}).WithContext(ctx).Should(Succeed())
}

// memberValue returns the ConfigMap's "key" in a member; "" when absent.
func memberValue(ctx context.Context, member, ns, name string) func() string {
	return func() string {
		cm := &corev1.ConfigMap{}
		if err := env.Members[member].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm); err != nil {
			return ""
		}
		return cm.Data["key"]
	}
}

var _ = Describe("Propagation rules", func() {
	It("deletes member objects with their template, unless the policy preserves them", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-delete")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "gone", "v1"))).To(Succeed())
		Eventually(memberValue(ctx, "member1", ns, "gone")).WithContext(ctx).Should(Equal("v1"))
		Expect(env.Host.Delete(ctx, configMap(ns, "gone", ""))).To(Succeed())
		Eventually(memberValue(ctx, "member1", ns, "gone")).WithContext(ctx).Should(BeEmpty())

		ns2 := templateNamespace(ctx, "e2e-preserve")
		Expect(env.Host.Create(ctx, policyTo(ns2, "keep", true, "member1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns2, "kept", "v1"))).To(Succeed())
		Eventually(memberValue(ctx, "member1", ns2, "kept")).WithContext(ctx).Should(Equal("v1"))
		Expect(env.Host.Delete(ctx, configMap(ns2, "kept", ""))).To(Succeed())
		Eventually(func() error {
			return env.Host.Get(ctx, types.NamespacedName{Namespace: ns2, Name: "kept-configmap"}, &workv1alpha2.ResourceBinding{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		Consistently(memberValue(ctx, "member1", ns2, "kept")).WithContext(ctx).WithTimeout(3 * time.Second).Should(Equal("v1"))
		// Released, as Karmada does: the member's now, and not taken over by a new template.
		kept := &corev1.ConfigMap{}
		Expect(env.Members["member1"].Get(ctx, types.NamespacedName{Namespace: ns2, Name: "kept"}, kept)).To(Succeed())
		Expect(kept.Labels).NotTo(HaveKey(wellknown.ManagedLabel))
		Expect(kept.Labels).NotTo(HaveKey(wellknown.PropagationPolicyPermanentIDLabel))
		Expect(kept.Annotations).NotTo(HaveKey(wellknown.ResourceTemplateUIDAnnotation))
		Expect(env.Host.Create(ctx, configMap(ns2, "kept", "v2"))).To(Succeed())
		eventuallyConflict(ctx, "member1", ns2, "kept", "not managed by Flotilla")
		Expect(memberValue(ctx, "member1", ns2, "kept")()).To(Equal("v1"))
	})

	It("keeps the member objects of a deleted policy's templates until the templates are deleted, and reclaims them for a new policy", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-unclaim")
		Expect(env.Host.Create(ctx, policyTo(ns, "first", false, "member2"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "v1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "other", "v1"))).To(Succeed())
		Eventually(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).Should(Equal("v1"))
		Eventually(memberValue(ctx, "member2", ns, "other")).WithContext(ctx).Should(Equal("v1"))

		// As Karmada: the binding lives as long as its template, unclaimed.
		Expect(env.Host.Delete(ctx, policyTo(ns, "first", false))).To(Succeed())
		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cm-configmap"}, rb)).To(Succeed())
			g.Expect(rb.Labels).NotTo(HaveKey(wellknown.PropagationPolicyPermanentIDLabel))
			g.Expect(rb.Spec.Placement).To(BeNil())
		}).WithContext(ctx).Should(Succeed())
		Consistently(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).WithTimeout(3 * time.Second).Should(Equal("v1"))
		setValue(ctx, ns, "cm", "v1.1")
		Eventually(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).Should(Equal("v1.1"), "its edits still reach the objects it left")

		By("deleting a template its policy no longer claims: its member object goes")
		Expect(env.Host.Delete(ctx, configMap(ns, "other", ""))).To(Succeed())
		Eventually(memberValue(ctx, "member2", ns, "other")).WithContext(ctx).Should(BeEmpty())

		By("a new policy takes the template over, and the managed member object with it")
		Expect(env.Host.Create(ctx, policyTo(ns, "second", false, "member2"))).To(Succeed())
		setValue(ctx, ns, "cm", "v2")
		Eventually(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).Should(Equal("v2"))
	})

	It("leaves nothing behind when a policy and its templates are deleted at once, policy first (kubectl delete -f)", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-delete-f")
		const n = 10
		for i := range n {
			pp := policyTo(ns, fmt.Sprintf("p%d", i), false, "member1", "member3")
			pp.Spec.ResourceSelectors[0].Name = fmt.Sprintf("cm%d", i)
			Expect(env.Host.Create(ctx, pp)).To(Succeed())
			Expect(env.Host.Create(ctx, configMap(ns, fmt.Sprintf("cm%d", i), "v1"))).To(Succeed())
		}
		eventuallyAllApplied(ctx, ns, n)
		for i := range n {
			// The order of a file that lists the policy before its template, as fast as kubectl.
			Expect(env.Host.Delete(ctx, policyTo(ns, fmt.Sprintf("p%d", i), false))).To(Succeed())
			Expect(env.Host.Delete(ctx, configMap(ns, fmt.Sprintf("cm%d", i), ""))).To(Succeed())
		}
		for i := range n {
			for _, member := range []string{"member1", "member3"} {
				Eventually(memberValue(ctx, member, ns, fmt.Sprintf("cm%d", i))).WithContext(ctx).Should(BeEmpty(), "cm%d is left in %s", i, member)
			}
		}
		Eventually(func(g Gomega) []workv1alpha2.ResourceBinding {
			rbs := &workv1alpha2.ResourceBindingList{}
			g.Expect(env.Host.List(ctx, rbs, client.InNamespace(ns))).To(Succeed())
			return rbs.Items
		}).WithContext(ctx).Should(BeEmpty())
	})

	It("stops propagating when a namespace opts out, without deleting member objects", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-optout")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member3"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "v1"))).To(Succeed())
		Eventually(memberValue(ctx, "member3", ns, "cm")).WithContext(ctx).Should(Equal("v1"))

		n := &corev1.Namespace{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Name: ns}, n)).To(Succeed())
		delete(n.Labels, wellknown.PropagationLabel)
		Expect(env.Host.Update(ctx, n)).To(Succeed())
		Eventually(func() error {
			return env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cm-configmap"}, &workv1alpha2.ResourceBinding{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))

		setValue(ctx, ns, "cm", "v2")
		Consistently(memberValue(ctx, "member3", ns, "cm")).WithContext(ctx).WithTimeout(3 * time.Second).Should(Equal("v1"))
		// Kept, not released: the template is still there, for a namespace that opts in again.
		kept := &corev1.ConfigMap{}
		Expect(env.Members["member3"].Get(ctx, types.NamespacedName{Namespace: ns, Name: "cm"}, kept)).To(Succeed())
		Expect(kept.Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))
	})

	It("does not touch an unmanaged member object unless told to overwrite it", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-conflict")
		Expect(env.Members["member1"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(env.Members["member1"].Create(ctx, configMap(ns, "theirs", "original"))).To(Succeed())
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "theirs", "ours"))).To(Succeed())

		eventuallyConflict(ctx, "member1", ns, "theirs", "not managed by Flotilla")
		Expect(memberValue(ctx, "member1", ns, "theirs")()).To(Equal("original"))

		// As `kubectl annotate` would: a patch, not an update that races the detector's claim.
		cm := &corev1.ConfigMap{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "theirs"}, cm)).To(Succeed())
		patch := []byte(`{"metadata":{"annotations":{"` + wellknown.ConflictResolutionAnnotation + `":"` + wellknown.ConflictResolutionOverwrite + `"}}}`)
		Expect(env.Host.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		Eventually(memberValue(ctx, "member1", ns, "theirs")).WithContext(ctx).Should(Equal("ours"))
	})

	It("puts back what someone changed by hand on a member", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-drift")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member2"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "desired"))).To(Succeed())
		Eventually(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).Should(Equal("desired"))

		cm := &corev1.ConfigMap{}
		Expect(env.Members["member2"].Get(ctx, types.NamespacedName{Namespace: ns, Name: "cm"}, cm)).To(Succeed())
		cm.Data["key"] = "edited by hand"
		Expect(env.Members["member2"].Update(ctx, cm)).To(Succeed())
		Eventually(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).Should(Equal("desired"))

		Expect(env.Members["member2"].Delete(ctx, cm)).To(Succeed())
		Eventually(memberValue(ctx, "member2", ns, "cm")).WithContext(ctx).Should(Equal("desired"))
	})
})

var _ = Describe("Host hold", func() {
	It("keeps workloads in opted-in namespaces from running on the host", func(ctx context.Context) {
		// templateNamespace waits until the apiserver enforces the hold there.
		ns := templateNamespace(ctx, "e2e-hold")
		plain := "e2e-hold-control"
		Expect(env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plain}})).To(Succeed())

		labels := map[string]string{"app": "held"}
		podSpec := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		for _, n := range []string{ns, plain} {
			deploySpec := podSpec.DeepCopy()
			deploySpec.Spec.RestartPolicy = corev1.RestartPolicyAlways
			Expect(env.Host.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "web"},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: *deploySpec}})).To(Succeed())
			Expect(env.Host.Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "db"},
				Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: *deploySpec,
					VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
						Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
							Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resourceQuantity("1Gi")}}}}}}})).To(Succeed())
			Expect(env.Host.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "once"},
				Spec: batchv1.JobSpec{Template: podSpec}})).To(Succeed())
		}
		// In the plain namespace the host's controllers create what they always create.
		Eventually(func(g Gomega) {
			g.Expect(count(ctx, &corev1.PodList{}, plain)).To(BeNumerically(">", 0))
			g.Expect(count(ctx, &appsv1.ReplicaSetList{}, plain)).To(BeNumerically(">", 0))
			g.Expect(count(ctx, &corev1.PersistentVolumeClaimList{}, plain)).To(BeNumerically(">", 0))
		}).WithContext(ctx).Should(Succeed())
		// In the template namespace nothing is created, and the templates say why.
		Expect(count(ctx, &corev1.PodList{}, ns)).To(BeZero())
		Expect(count(ctx, &appsv1.ReplicaSetList{}, ns)).To(BeZero())
		Expect(count(ctx, &corev1.PersistentVolumeClaimList{}, ns)).To(BeZero())
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(env.Host.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			var denied []string
			for _, e := range events.Items {
				if e.Type == corev1.EventTypeWarning {
					denied = append(denied, e.InvolvedObject.Kind+": "+e.Message)
				}
			}
			g.Expect(denied).To(ContainElement(And(HavePrefix("Deployment:"), ContainSubstring(wellknown.PropagationLabel))))
		}).WithContext(ctx).Should(Succeed())
		// The StatefulSet controller stops at its first step, the ControllerRevision (denied; it
		// records no event for that).
		Expect(count(ctx, &appsv1.ControllerRevisionList{}, ns)).To(BeZero())
		Expect(count(ctx, &appsv1.ControllerRevisionList{}, plain)).To(BeNumerically(">", 0))
		// The host's Job controller leaves the held Job alone: the hold gave it spec.managedBy.
		held := &batchv1.Job{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "once"}, held)).To(Succeed())
		Expect(held.Spec.ManagedBy).To(HaveValue(Equal(wellknown.JobManagedBy)))
		Expect(held.Status.StartTime).To(BeNil(), "the host's Job controller started the held Job")

		// CronJobs make Jobs at most once a minute; ask the policy directly, as the CronJob
		// controller would.
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-cron",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: "0b9f6b54-1f4e-4c59-8b68-2f1d6c1a0001"}}},
			Spec: batchv1.JobSpec{Template: podSpec}}
		err := env.Host.Create(ctx, job)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(wellknown.PropagationLabel))
	})
})

// setValue changes a template ConfigMap's value with a merge patch, as `kubectl patch` would.
func setValue(ctx context.Context, ns, name, value string) {
	cm := &corev1.ConfigMap{}
	ExpectWithOffset(1, env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)).To(Succeed())
	patch := []byte(`{"data":{"key":"` + value + `"}}`)
	ExpectWithOffset(1, env.Host.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

func count(ctx context.Context, list client.ObjectList, ns string) int {
	ExpectWithOffset(1, env.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return meta.LenList(list)
}

var _ = Describe("Leader election", func() {
	It("hands over to a second manager within 30 seconds", func(ctx context.Context) {
		cfg, err := env.ManagerConfig(ctx)
		Expect(err).NotTo(HaveOccurred())
		standby, err := startManager(cfg)
		Expect(err).NotTo(HaveOccurred())
		// The standby becomes the suite's manager; the suite's cleanup stops it.

		// The suite's manager leads; stop it and the standby must take over.
		stopped := time.Now()
		Expect(manager.Stop()).To(Succeed())
		manager = standby
		ns := templateNamespace(ctx, "e2e-leader")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1"))).To(Succeed())
		Expect(env.Host.Create(ctx, configMap(ns, "cm", "after-handover"))).To(Succeed())
		Eventually(memberValue(ctx, "member1", ns, "cm")).WithContext(ctx).WithTimeout(30 * time.Second).Should(Equal("after-handover"))
		GinkgoWriter.Println(fmt.Sprintf("handover to propagation: %s", time.Since(stopped).Round(time.Millisecond)))
	})
})
