package detector_test

import (
	"testing"

	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// policy returns a PropagationPolicy (ns set) or ClusterPropagationPolicy (ns empty) that
// selects the given kind and, if given, name, and places on member1 and member2.
func policy(ns, name string, sel policyv1alpha1.ResourceSelector) client.Object {
	spec := policyv1alpha1.PropagationSpec{
		ResourceSelectors: []policyv1alpha1.ResourceSelector{sel},
		Placement: policyv1alpha1.Placement{
			ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated,
			},
		},
	}
	if ns == "" {
		return &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	}
	return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func selectConfigMap(name string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: name}
}

func createPP(ctx context.Context, ns, name string, sel policyv1alpha1.ResourceSelector, mutate ...func(*policyv1alpha1.PropagationSpec)) *policyv1alpha1.PropagationPolicy {
	GinkgoHelper()
	pp := policy(ns, name, sel).(*policyv1alpha1.PropagationPolicy)
	for _, m := range mutate {
		m(&pp.Spec)
	}
	Expect(env.Host.Create(ctx, pp)).To(Succeed())
	return pp
}

// rb returns the key-only ResourceBinding of a namespaced template.
func rb(ns, kind, name string) *workv1alpha2.ResourceBinding {
	return &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: detector.BindingName(kind, name)}}
}

// expectClaimedBy waits until the template is claimed by the PropagationPolicy: its binding
// carries the policy's permanent id (the policy's UID), namespace and name. The template
// itself carries no claim: Flotilla never writes it.
func expectClaimedBy(ctx context.Context, tmpl client.Object, pp *policyv1alpha1.PropagationPolicy) {
	GinkgoHelper()
	gvk, err := apiutil.GVKForObject(tmpl, env.Scheme)
	Expect(err).NotTo(HaveOccurred())
	kind := gvk.Kind
	Eventually(func(g Gomega) {
		b := rb(tmpl.GetNamespace(), kind, tmpl.GetName())
		env.Get(ctx, g, b)
		g.Expect(b.Labels).To(HaveKeyWithValue(wellknown.PropagationPolicyPermanentIDLabel, string(pp.UID)))
		g.Expect(b.Annotations).To(And(
			HaveKeyWithValue(wellknown.PropagationPolicyNamespaceAnnotation, pp.Namespace),
			HaveKeyWithValue(wellknown.PropagationPolicyNameAnnotation, pp.Name)))
	}).WithContext(ctx).Should(Succeed())
	expectNoClaimOnTemplate(ctx, tmpl)
}

// expectNoClaimOnTemplate checks that the template carries none of the claim's keys.
func expectNoClaimOnTemplate(ctx context.Context, tmpl client.Object) {
	GinkgoHelper()
	Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(tmpl), tmpl)).To(Succeed())
	Expect(tmpl.GetLabels()).NotTo(Or(HaveKey(wellknown.PropagationPolicyPermanentIDLabel),
		HaveKey(wellknown.ClusterPropagationPolicyPermanentIDLabel)))
	Expect(tmpl.GetAnnotations()).NotTo(Or(HaveKey(wellknown.PropagationPolicyNameAnnotation),
		HaveKey(wellknown.PropagationPolicyNamespaceAnnotation), HaveKey(wellknown.ClusterPropagationPolicyNameAnnotation)))
}

// expectUnclaimed waits until no policy claims the template: its binding is gone (or being
// deleted), or carries no claim.
func expectUnclaimed(ctx context.Context, tmpl client.Object) {
	GinkgoHelper()
	gvk, err := apiutil.GVKForObject(tmpl, env.Scheme)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		b := rb(tmpl.GetNamespace(), gvk.Kind, tmpl.GetName())
		err := env.Host.Get(ctx, client.ObjectKeyFromObject(b), b)
		if err == nil && b.DeletionTimestamp == nil {
			g.Expect(b.Labels).NotTo(Or(HaveKey(wellknown.PropagationPolicyPermanentIDLabel),
				HaveKey(wellknown.ClusterPropagationPolicyPermanentIDLabel)))
		} else if err != nil {
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		}
	}).WithContext(ctx).Should(Succeed())
	expectNoClaimOnTemplate(ctx, tmpl)
}

// expectBindingDeleted waits until the detector has deleted the binding: with no binding
// controller running, the binding waits on its finalizer, which shows how it was deleted.
// Then it releases the binding.
func expectBindingDeleted(ctx context.Context, b client.Object, preserve bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		env.Get(ctx, g, b)
		g.Expect(b.GetDeletionTimestamp()).NotTo(BeNil())
	}).WithContext(ctx).Should(Succeed())
	spec := b.(*workv1alpha2.ResourceBinding).Spec
	Expect(ptr.Deref(spec.PreserveResourcesOnDeletion, false)).To(Equal(preserve), "preserveResourcesOnDeletion")
	env.Release(ctx, b)
	Eventually(fleettest.Gone(ctx, env.Host, b)).WithContext(ctx).Should(BeTrue())
}

// expectBindingAtGeneration waits until the binding records the template's current
// generation: the detector has written it for this version of the template.
func expectBindingAtGeneration(ctx context.Context, tmpl, b client.Object) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		env.Get(ctx, g, tmpl)
		env.Get(ctx, g, b)
		g.Expect(b.GetAnnotations()).To(HaveKeyWithValue(wellknown.ResourceTemplateGenerationAnnotation, fmt.Sprint(tmpl.GetGeneration())))
	}).WithContext(ctx).Should(Succeed())
}

// scale sets the Deployment's replicas and waits until its binding is written for that
// version of it, with those replicas.
func scale(ctx context.Context, web *appsv1.Deployment, b *workv1alpha2.ResourceBinding, replicas int32) {
	GinkgoHelper()
	patch := client.MergeFrom(web.DeepCopy())
	web.Spec.Replicas = ptr.To(replicas)
	Expect(env.Host.Patch(ctx, web, patch)).To(Succeed())
	expectBindingAtGeneration(ctx, web, b)
	Expect(b.Spec.Replicas).To(Equal(replicas))
}

// noPolicyWarnings counts the no-policy warnings about obj (ApplyPolicyFailed with
// MessageNoPolicyMatch), series included.
func noPolicyWarnings(ctx context.Context, g Gomega, obj client.Object) int {
	n := 0
	for _, e := range env.Events(ctx, g, obj) {
		if e.Reason == wellknown.EventReasonApplyPolicyFailed && e.Note == wellknown.MessageNoPolicyMatch {
			g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
			n++
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}

var _ = Describe("Binding templates to PropagationPolicies", func() {
	It("claims a template and writes its ResourceBinding: replicas and requirements, placement, finalizer, owner", func(ctx SpecContext) {
		ns := "det-basic"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "web", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"})
		web := fleettest.Deployment(ns, "web", 3)
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		expectClaimedBy(ctx, web, pp)

		b := rb(ns, "Deployment", "web")
		env.Get(ctx, Default, b)
		Expect(b.Name).To(Equal("web-deployment"))
		Expect(b.Labels).To(HaveKeyWithValue(wellknown.ResourceBindingPermanentIDLabel, Not(BeEmpty())))
		Expect(b.Finalizers).To(ConsistOf(wellknown.BindingControllerFinalizer))
		Expect(b.OwnerReferences).To(ConsistOf(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment",
			Name: "web", UID: web.UID, Controller: ptr.To(true)}))
		// The claim's annotations bumped the Deployment's generation (Deployments count
		// annotation changes); the binding names the generation it was made from.
		Expect(b.Annotations).To(HaveKeyWithValue(wellknown.ResourceTemplateGenerationAnnotation, fmt.Sprint(web.Generation)))
		Expect(b.Spec.Resource).To(Equal(workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment",
			Namespace: ns, Name: "web", UID: web.UID, ResourceVersion: b.Spec.Resource.ResourceVersion}))
		Expect(b.Spec.Replicas).To(Equal(int32(3)))
		Expect(b.Spec.ReplicaRequirements).NotTo(BeNil())
		Expect(equality.Semantic.DeepEqual(b.Spec.ReplicaRequirements.ResourceRequest, corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		})).To(BeTrue(), "resourceRequest: %v", b.Spec.ReplicaRequirements.ResourceRequest)
		Expect(b.Spec.Placement).To(Equal(&pp.Spec.Placement))
		Expect(b.Spec.SchedulerName).To(Equal(wellknown.DefaultSchedulerName))
		Expect(b.Spec.ConflictResolution).To(Equal(policyv1alpha1.ConflictAbort))
		Expect(b.Spec.Clusters).To(BeEmpty(), "scheduling is not the detector's")

		By("following the template's new replicas and generation")
		scale(ctx, web, b, 5)

		By("following the policy's new placement")
		patch := client.MergeFrom(pp.DeepCopy())
		pp.Spec.Placement.ClusterAffinity.ClusterNames = []string{"member2"}
		Expect(env.Host.Patch(ctx, pp, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			env.Get(ctx, g, b)
			g.Expect(b.Spec.Placement.ClusterAffinity.ClusterNames).To(Equal([]string{"member2"}))
		}).WithContext(ctx).Should(Succeed())
	})

	It("writes the template's workload-affinity groups, key=value of its labels, and follows its label", func(ctx SpecContext) {
		ns := "det-affinity"
		env.TemplateNamespace(ctx, ns)
		createPP(ctx, ns, "pipelines", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"},
			func(s *policyv1alpha1.PropagationSpec) {
				s.Placement.WorkloadAffinity = &policyv1alpha1.WorkloadAffinity{
					Affinity:     &policyv1alpha1.WorkloadAffinityTerm{GroupByLabelKey: "app.group"},
					AntiAffinity: &policyv1alpha1.WorkloadAffinityTerm{GroupByLabelKey: "ha.pair"},
				}
			})
		web := fleettest.Deployment(ns, "flink-a", 1)
		web.Labels = map[string]string{"app.group": "indexer", "ha.pair": "a"}
		bare := fleettest.Deployment(ns, "flink-b", 1)
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		Expect(env.Host.Create(ctx, bare)).To(Succeed())
		b := rb(ns, "Deployment", "flink-a")
		Eventually(func(g Gomega) *workv1alpha2.WorkloadAffinityGroups {
			env.Get(ctx, g, b)
			return b.Spec.WorkloadAffinityGroups
		}).WithContext(ctx).Should(Equal(&workv1alpha2.WorkloadAffinityGroups{AffinityGroup: "app.group=indexer", AntiAffinityGroup: "ha.pair=a"}))
		Eventually(func(g Gomega) {
			nb := rb(ns, "Deployment", "flink-b")
			env.Get(ctx, g, nb)
			g.Expect(nb.Spec.Placement).NotTo(BeNil())
			g.Expect(nb.Spec.WorkloadAffinityGroups).To(BeNil(), "a template without the labels is in no group")
		}).WithContext(ctx).Should(Succeed())

		By("a label edit moves the template to another group")
		patch := client.MergeFrom(web.DeepCopy())
		web.Labels["ha.pair"] = "b"
		delete(web.Labels, "app.group")
		Expect(env.Host.Patch(ctx, web, patch)).To(Succeed())
		Eventually(func(g Gomega) *workv1alpha2.WorkloadAffinityGroups {
			env.Get(ctx, g, b)
			return b.Spec.WorkloadAffinityGroups
		}).WithContext(ctx).Should(Equal(&workv1alpha2.WorkloadAffinityGroups{AntiAffinityGroup: "ha.pair=b"}))
	})

	It("holds a Lazy policy's changes back from the templates it binds until each changes (activationPreference: Lazy)", func(ctx SpecContext) {
		ns := "det-lazy"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "web", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			func(s *policyv1alpha1.PropagationSpec) { s.ActivationPreference = policyv1alpha1.LazyActivation })
		web := fleettest.Deployment(ns, "web", 3)
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		expectClaimedBy(ctx, web, pp)
		b := rb(ns, "Deployment", "web")
		expectBindingAtGeneration(ctx, web, b)
		Expect(b.Spec.Placement.ClusterAffinity.ClusterNames).To(Equal([]string{"member1", "member2"}), "a new claim gets the policy at once")

		By("a change of the policy alone does not reach the binding")
		patch := client.MergeFrom(pp.DeepCopy())
		pp.Spec.Placement.ClusterAffinity.ClusterNames = []string{"member2"}
		Expect(env.Host.Patch(ctx, pp, patch)).To(Succeed())
		Consistently(func(g Gomega) []string {
			env.Get(ctx, g, b)
			return b.Spec.Placement.ClusterAffinity.ClusterNames
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Equal([]string{"member1", "member2"}))

		By("the template's next change brings the policy as it is now")
		scale(ctx, web, b, 4)
		Expect(b.Spec.Placement.ClusterAffinity.ClusterNames).To(Equal([]string{"member2"}))

		By("a policy that is no longer Lazy applies its changes at once")
		patch = client.MergeFrom(pp.DeepCopy())
		pp.Spec.ActivationPreference = ""
		pp.Spec.Placement.ClusterAffinity.ClusterNames = []string{"member1"}
		Expect(env.Host.Patch(ctx, pp, patch)).To(Succeed())
		Eventually(func(g Gomega) []string {
			env.Get(ctx, g, b)
			return b.Spec.Placement.ClusterAffinity.ClusterNames
		}).WithContext(ctx).Should(Equal([]string{"member1"}))
	})

	It("rewrites no binding for a change of kubectl's last-applied-configuration alone, which never reaches the members", func(ctx SpecContext) {
		ns := "det-last-applied"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "db", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"})
		labels := map[string]string{"app": "db"}
		db := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db",
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"StatefulSet","spec":{"replicas":1}}`}},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres"}}}}}}
		Expect(env.Host.Create(ctx, db)).To(Succeed())
		expectClaimedBy(ctx, db, pp)
		b := rb(ns, "StatefulSet", "db")
		expectBindingAtGeneration(ctx, db, b)
		written := b.ResourceVersion

		By("kubectl applying the same spec again, with another last-applied-configuration")
		patch := client.MergeFrom(db.DeepCopy())
		db.Annotations[corev1.LastAppliedConfigAnnotation] = `{"kind":"StatefulSet","spec":{"replicas":1},"metadata":{"name":"db"}}`
		Expect(env.Host.Patch(ctx, db, patch)).To(Succeed())
		Consistently(func(g Gomega) string {
			env.Get(ctx, g, b)
			return b.ResourceVersion
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Equal(written))

		By("an annotation that reaches the members rewrites it")
		patch = client.MergeFrom(db.DeepCopy())
		db.Annotations["team"] = "data"
		Expect(env.Host.Patch(ctx, db, patch)).To(Succeed())
		Eventually(func(g Gomega) string {
			env.Get(ctx, g, b)
			return b.ResourceVersion
		}).WithContext(ctx).ShouldNot(Equal(written))
	})

	It("gives an unclaimed template to the highest priority, and moves a claimed one only for preemption: Always", func(ctx SpecContext) {
		ns := "det-priority"
		env.TemplateNamespace(ctx, ns)
		prio := func(p int32, preempt policyv1alpha1.PreemptionBehavior) func(*policyv1alpha1.PropagationSpec) {
			return func(s *policyv1alpha1.PropagationSpec) { s.Priority, s.Preemption = ptr.To(p), preempt }
		}
		createPP(ctx, ns, "low", selectConfigMap("cfg"), prio(1, ""))
		mid := createPP(ctx, ns, "mid", selectConfigMap("cfg"), prio(5, ""))
		cfg := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		Expect(env.Host.Create(ctx, cfg)).To(Succeed())
		expectClaimedBy(ctx, cfg, mid)

		By("a data edit, which changes no generation, reaches the binding")
		b0 := rb(ns, "ConfigMap", "cfg")
		env.Get(ctx, Default, b0)
		env.Get(ctx, Default, cfg)
		cfg.Data["k"] = "changed"
		Expect(env.Host.Update(ctx, cfg)).To(Succeed())
		Eventually(func(g Gomega) string {
			env.Get(ctx, g, b0)
			return b0.Spec.Resource.ResourceVersion
		}).WithContext(ctx).Should(Equal(cfg.ResourceVersion))

		By("a higher priority without preemption leaves the claim alone")
		createPP(ctx, ns, "high", selectConfigMap("cfg"), prio(10, policyv1alpha1.PreemptNever))
		Consistently(func(g Gomega) {
			claim := rb(ns, "ConfigMap", "cfg")
			env.Get(ctx, g, claim)
			g.Expect(claim.Annotations).To(HaveKeyWithValue(wellknown.PropagationPolicyNameAnnotation, "mid"))
		}).WithContext(ctx).Should(Succeed())

		By("a higher priority with preemption: Always takes the template, and its binding")
		b := rb(ns, "ConfigMap", "cfg")
		env.Get(ctx, Default, b)
		bindingID := b.Labels[wellknown.ResourceBindingPermanentIDLabel]
		top := createPP(ctx, ns, "top", selectConfigMap("cfg"), prio(20, policyv1alpha1.PreemptAlways))
		expectClaimedBy(ctx, cfg, top)
		env.Get(ctx, Default, b)
		Expect(b.Labels).To(HaveKeyWithValue(wellknown.ResourceBindingPermanentIDLabel, bindingID), "the binding is updated, not replaced")
		Eventually(func(g Gomega) []string {
			var notes []string
			for _, e := range env.Events(ctx, g, cfg) {
				notes = append(notes, e.Note)
			}
			return notes
		}).WithContext(ctx).Should(ContainElement(ContainSubstring("preempted the previous policy")))
		// The first claim told nothing (its binding's FullyApplied event does); events are
		// sent in the order they are recorded, so one for it would be here by now.
		n := 0
		for _, r := range env.EventReasons(ctx, Default, cfg) {
			if r == wellknown.EventReasonApplyPolicySucceed {
				n++
			}
		}
		Expect(n).To(Equal(1), "one ApplyPolicySucceed: the preemption's")
	})

	It("chooses by precision among the policies that select by name, by label and by kind, and follows a selector that lets go", func(ctx SpecContext) {
		ns := "det-precision"
		env.TemplateNamespace(ctx, ns)
		byKind := createPP(ctx, ns, "by-kind", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap"})
		byLabel := createPP(ctx, ns, "by-label", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}})
		byName := createPP(ctx, ns, "by-name", selectConfigMap("named"))
		createPP(ctx, ns, "other-name", selectConfigMap("unrelated"))
		createPP(ctx, ns, "other-kind", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Secret"})
		named := fleettest.ConfigMap(ns, "named", map[string]string{"k": "v"})
		named.Labels = map[string]string{"tier": "front"}
		labelled := fleettest.ConfigMap(ns, "labelled", map[string]string{"k": "v"})
		labelled.Labels = map[string]string{"tier": "front"}
		plain := fleettest.ConfigMap(ns, "plain", map[string]string{"k": "v"})
		for _, cm := range []*corev1.ConfigMap{named, labelled, plain} {
			Expect(env.Host.Create(ctx, cm)).To(Succeed())
		}
		expectClaimedBy(ctx, named, byName)
		expectClaimedBy(ctx, labelled, byLabel)
		expectClaimedBy(ctx, plain, byKind)

		By("a policy whose selector no longer names its template lets it go to the next best")
		patch := client.MergeFrom(byName.DeepCopy())
		byName.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{selectConfigMap("renamed")}
		Expect(env.Host.Patch(ctx, byName, patch)).To(Succeed())
		expectClaimedBy(ctx, named, byLabel)
	})

	It("keeps the binding of a deleted policy's template, unclaimed, until the template is deleted, and warns that none matches", func(ctx SpecContext) {
		ns := "det-policy-deleted"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "keep", selectConfigMap("kept"))
		kept := fleettest.ConfigMap(ns, "kept", map[string]string{"k": "v"})
		Expect(env.Host.Create(ctx, kept)).To(Succeed())
		expectClaimedBy(ctx, kept, pp)
		// Scheduled, as the scheduler (not run here) would: it has member objects.
		b := rb(ns, "ConfigMap", "kept")
		env.Get(ctx, Default, b)
		patch := client.MergeFrom(b.DeepCopy())
		b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1"}}
		Expect(env.Host.Patch(ctx, b, patch)).To(Succeed())

		Expect(env.Host.Delete(ctx, pp)).To(Succeed())
		expectUnclaimed(ctx, kept)
		Eventually(func(g Gomega) {
			env.Get(ctx, g, b)
			g.Expect(b.DeletionTimestamp).To(BeNil(), "the binding lives as long as its template")
			g.Expect(b.Spec.Placement).To(BeNil(), "nothing schedules it again")
			g.Expect(b.Spec.Clusters).To(Equal([]workv1alpha2.TargetCluster{{Name: "member1"}}), "its member objects stay where they are")
			g.Expect(b.Annotations).NotTo(HaveKey(wellknown.PropagationPolicyNameAnnotation))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) int { return noPolicyWarnings(ctx, g, kept) }).WithContext(ctx).Should(Equal(1))

		By("following the template's edits")
		patch = client.MergeFrom(kept.DeepCopy())
		kept.Data = map[string]string{"k": "v2"}
		Expect(env.Host.Patch(ctx, kept, patch)).To(Succeed())
		Eventually(func(g Gomega) string {
			env.Get(ctx, g, b)
			return b.Spec.Resource.ResourceVersion
		}).WithContext(ctx).Should(Equal(kept.ResourceVersion))

		By("binding it again to the next policy, which takes the binding over")
		next := createPP(ctx, ns, "next", selectConfigMap("kept"))
		expectClaimedBy(ctx, kept, next)
		env.Get(ctx, Default, b)
		Expect(b.Spec.Placement).NotTo(BeNil())

		By("deleting the template, after its policy: the binding goes, and its member objects with it")
		Expect(env.Host.Delete(ctx, next)).To(Succeed())
		expectUnclaimed(ctx, kept)
		Expect(env.Host.Delete(ctx, kept)).To(Succeed())
		expectBindingDeleted(ctx, b, false)
	})

	It("deletes the binding of a deleted policy's template that was never scheduled: it has nothing in the members", func(ctx SpecContext) {
		ns := "det-policy-deleted-unscheduled"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "p", selectConfigMap("c"))
		cm := fleettest.ConfigMap(ns, "c", nil)
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		expectClaimedBy(ctx, cm, pp)
		Expect(env.Host.Delete(ctx, pp)).To(Succeed())
		expectBindingDeleted(ctx, rb(ns, "ConfigMap", "c"), false)
	})

	It("deletes the binding of a deleted template, and with it the member objects", func(ctx SpecContext) {
		ns := "det-template-deleted"
		env.TemplateNamespace(ctx, ns)
		pp := createPP(ctx, ns, "all", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap"})
		cm := fleettest.ConfigMap(ns, "doomed", nil)
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		expectClaimedBy(ctx, cm, pp)

		Expect(env.Host.Delete(ctx, cm)).To(Succeed())
		expectBindingDeleted(ctx, rb(ns, "ConfigMap", "doomed"), false)
	})

	It("binds nothing in a namespace that is not opted in, and unbinds a namespace that opts out", func(ctx SpecContext) {
		ns := "det-not-opted-in"
		nsObj := env.CreateNamespace(ctx, ns, nil)
		pp := createPP(ctx, ns, "all", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap"})
		cm := fleettest.ConfigMap(ns, "plain", nil)
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		// The same template in an opted-in namespace shows the detector has seen it.
		control := "det-not-opted-in-control"
		env.TemplateNamespace(ctx, control)
		controlPP := createPP(ctx, control, "all", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap"})
		controlCM := fleettest.ConfigMap(control, "plain", nil)
		Expect(env.Host.Create(ctx, controlCM)).To(Succeed())
		expectClaimedBy(ctx, controlCM, controlPP)

		Consistently(func(g Gomega) {
			env.Get(ctx, g, cm)
			g.Expect(cm.Labels).NotTo(HaveKey(wellknown.PropagationPolicyPermanentIDLabel))
			g.Expect(fleettest.Gone(ctx, env.Host, rb(ns, "ConfigMap", "plain"))()).To(BeTrue(), "no binding")
			g.Expect(noPolicyWarnings(ctx, g, cm)).To(BeZero(), "templates out of scope are not warned about")
		}).WithContext(ctx).Should(Succeed())

		By("opting the namespace in")
		patch := client.MergeFrom(nsObj.DeepCopy())
		nsObj.Labels = map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}
		Expect(env.Host.Patch(ctx, nsObj, patch)).To(Succeed())
		expectClaimedBy(ctx, cm, pp)

		By("opting it out again")
		patch = client.MergeFrom(nsObj.DeepCopy())
		delete(nsObj.Labels, wellknown.PropagationLabel)
		Expect(env.Host.Patch(ctx, nsObj, patch)).To(Succeed())
		expectBindingDeleted(ctx, rb(ns, "ConfigMap", "plain"), true)
		expectUnclaimed(ctx, cm)
		Expect(noPolicyWarnings(ctx, Default, cm)).To(BeZero())
	})

	It("warns once about a template no policy selects, then binds it when one does", func(ctx SpecContext) {
		ns := "det-no-policy"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "orphan", nil)
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) int { return noPolicyWarnings(ctx, g, cm) }).WithContext(ctx).Should(Equal(1))

		// More events on the template do not repeat the warning.
		for i := range 3 {
			patch := client.MergeFrom(cm.DeepCopy())
			cm.Labels = map[string]string{"touch": string(rune('a' + i))}
			Expect(env.Host.Patch(ctx, cm, patch)).To(Succeed())
		}
		Consistently(func(g Gomega) int { return noPolicyWarnings(ctx, g, cm) }).WithContext(ctx).Should(Equal(1))
		Expect(fleettest.Gone(ctx, env.Host, rb(ns, "ConfigMap", "orphan"))()).To(BeTrue())

		pp := createPP(ctx, ns, "late", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"touch": "c"}}})
		expectClaimedBy(ctx, cm, pp)
	})
})

var _ = Describe("Binding cluster-scoped templates to ClusterPropagationPolicies", func() {
	It("claims a ClusterRole and writes its ClusterResourceBinding, without warning about the other ClusterRoles", func(ctx SpecContext) {
		cpp := policy("", "readers", policyv1alpha1.ResourceSelector{APIVersion: "rbac.authorization.k8s.io/v1",
			Kind: "ClusterRole", Name: "det-reader"}).(*policyv1alpha1.ClusterPropagationPolicy)
		Expect(env.Host.Create(ctx, cpp)).To(Succeed())
		role := &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "det-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
		}
		Expect(env.Host.Create(ctx, role)).To(Succeed())

		crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "det-reader-clusterrole"}}
		Eventually(func(g Gomega) {
			env.Get(ctx, g, crb)
			g.Expect(crb.Labels).To(HaveKeyWithValue(wellknown.ClusterPropagationPolicyPermanentIDLabel, string(cpp.UID)))
			g.Expect(crb.Annotations).To(HaveKeyWithValue(wellknown.ClusterPropagationPolicyNameAnnotation, "readers"))
		}).WithContext(ctx).Should(Succeed())
		rv := role.ResourceVersion
		expectNoClaimOnTemplate(ctx, role)
		Expect(role.ResourceVersion).To(Equal(rv), "the template is never written")
		Expect(crb.Labels).To(HaveKeyWithValue(wellknown.ClusterResourceBindingPermanentIDLabel, Not(BeEmpty())))
		Expect(crb.Finalizers).To(ConsistOf(wellknown.BindingControllerFinalizer))
		Expect(crb.Spec.Resource).To(Equal(workv1alpha2.ObjectReference{APIVersion: "rbac.authorization.k8s.io/v1",
			Kind: "ClusterRole", Name: "det-reader", UID: role.UID, ResourceVersion: crb.Spec.Resource.ResourceVersion}))
		Expect(crb.Spec.Replicas).To(BeZero())
		Expect(crb.Spec.Placement).To(Equal(&cpp.Spec.Placement))

		// The host's own ClusterRoles are candidates too, but only templates of opted-in
		// namespaces are warned about.
		Consistently(func(g Gomega) []string {
			events := &corev1.EventList{}
			g.Expect(env.Host.List(ctx, events)).To(Succeed())
			var warned []string
			for _, e := range events.Items {
				if e.Reason == wellknown.EventReasonApplyPolicyFailed && e.Message == wellknown.MessageNoPolicyMatch && e.InvolvedObject.Namespace == "" {
					warned = append(warned, e.InvolvedObject.Kind+" "+e.InvolvedObject.Name)
				}
			}
			return warned
		}).WithContext(ctx).Should(BeEmpty())
	})
})

func TestWorkloadAffinityGroups(t *testing.T) {
	tmpl := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a",
		Labels: map[string]string{"app": "web", "pair": ""}}}
	term := func(key string) *policyv1alpha1.WorkloadAffinityTerm {
		return &policyv1alpha1.WorkloadAffinityTerm{GroupByLabelKey: key}
	}
	clusterScoped := tmpl.DeepCopy()
	clusterScoped.Namespace = ""
	for _, tc := range []struct {
		name string
		tmpl *metav1.PartialObjectMetadata
		wa   *policyv1alpha1.WorkloadAffinity
		want *workv1alpha2.WorkloadAffinityGroups
	}{
		{"no workloadAffinity", tmpl, nil, nil},
		{"affinity", tmpl, &policyv1alpha1.WorkloadAffinity{Affinity: term("app")}, &workv1alpha2.WorkloadAffinityGroups{AffinityGroup: "app=web"}},
		{"anti-affinity, empty value", tmpl, &policyv1alpha1.WorkloadAffinity{AntiAffinity: term("pair")}, &workv1alpha2.WorkloadAffinityGroups{AntiAffinityGroup: "pair="}},
		{"label missing", tmpl, &policyv1alpha1.WorkloadAffinity{Affinity: term("tier"), AntiAffinity: term("zone")}, nil},
		{"cluster-scoped", clusterScoped, &policyv1alpha1.WorkloadAffinity{Affinity: term("app")}, nil},
	} {
		if got := detector.WorkloadAffinityGroups(tc.tmpl, tc.wa); !equality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
