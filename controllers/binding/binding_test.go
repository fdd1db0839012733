package binding_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/overrides"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// bindingFor creates the binding the detector would write for a template, scheduled as the
// scheduler would; without the binding controller's finalizer when finalizer is false.
func bindingFor(ctx context.Context, tmpl client.Object, replicas int32, finalizer bool, clusters []workv1alpha2.TargetCluster) client.Object {
	GinkgoHelper()
	rb := env.Binding(tmpl, replicas, clusters...)
	if !finalizer {
		rb.SetFinalizers(nil)
	}
	Expect(env.Host.Create(ctx, rb)).To(Succeed())
	return rb
}

// workKey is the key of the Work that carries the template to the cluster.
func workKey(cluster string, tmpl client.Object) types.NamespacedName {
	gvk, err := apiutil.GVKForObject(tmpl, env.Scheme)
	Expect(err).NotTo(HaveOccurred())
	return types.NamespacedName{Namespace: wellknown.ExecutionNamespace(cluster),
		Name: bindings.WorkName(gvk.Kind, tmpl.GetNamespace(), tmpl.GetName())}
}

func getWork(ctx context.Context, g Gomega, cluster string, tmpl client.Object) *workv1alpha1.Work {
	w := &workv1alpha1.Work{}
	g.Expect(env.Host.Get(ctx, workKey(cluster, tmpl), w)).To(Succeed())
	return w
}

// manifest waits for the template's Work on the cluster and returns it and its manifest
// once check passes.
func manifest(ctx context.Context, cluster string, tmpl client.Object,
	check func(g Gomega, w *workv1alpha1.Work, m *unstructured.Unstructured),
) (*workv1alpha1.Work, *unstructured.Unstructured) {
	GinkgoHelper()
	var w *workv1alpha1.Work
	var m *unstructured.Unstructured
	Eventually(func(g Gomega) {
		w = getWork(ctx, g, cluster, tmpl)
		g.Expect(w.Spec.Workload.Manifests).To(HaveLen(1))
		m = fleettest.Manifest(g, w, 0)
		if check != nil {
			check(g, w, m)
		}
	}).WithContext(ctx).Should(Succeed())
	return w, m
}

func replicasOf(g Gomega, m *unstructured.Unstructured) int64 {
	r, found, err := unstructured.NestedInt64(m.Object, "spec", "replicas")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	return r
}

func imageOf(g Gomega, m *unstructured.Unstructured) string {
	cs, _, err := unstructured.NestedSlice(m.Object, "spec", "template", "spec", "containers")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs).To(HaveLen(1))
	return cs[0].(map[string]any)["image"].(string)
}

// expectWorkDeleted waits until the binding controller has deleted the Work (it waits on the
// execution finalizer, as no execution controller runs), checks what it was told about the
// member objects, and lets it go.
func expectWorkDeleted(ctx context.Context, key types.NamespacedName, preserve bool) *workv1alpha1.Work {
	GinkgoHelper()
	w := &workv1alpha1.Work{}
	Eventually(func(g Gomega) {
		g.Expect(env.Host.Get(ctx, key, w)).To(Succeed())
		g.Expect(w.DeletionTimestamp).NotTo(BeNil())
	}).WithContext(ctx).Should(Succeed())
	Expect(ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false)).To(Equal(preserve), "preserveResourcesOnDeletion")
	env.Release(ctx, w)
	Eventually(fleettest.Gone(ctx, env.Host, w)).WithContext(ctx).Should(BeTrue())
	return w
}

func overridden(ctx context.Context, g Gomega, rb client.Object) *metav1.Condition {
	env.Get(ctx, g, rb)
	return meta.FindStatusCondition(bindings.Status(rb).Conditions, wellknown.ConditionOverridden)
}

func deploymentSelector(name string) []policyv1alpha1.ResourceSelector {
	return []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}}
}

func onCluster(name string) *policyv1alpha1.ClusterAffinity {
	return &policyv1alpha1.ClusterAffinity{ClusterNames: []string{name}}
}

// boundEverywhere creates a ConfigMap template "cfg" in a new opted-in namespace, and its
// binding to every cluster, and waits for its Works.
func boundEverywhere(ctx context.Context, ns string) (*corev1.ConfigMap, client.Object) {
	GinkgoHelper()
	env.TemplateNamespace(ctx, ns)
	cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
	Expect(env.Host.Create(ctx, cm)).To(Succeed())
	rb := bindingFor(ctx, cm, 0, true, fleettest.Scheduled("member1", 0, "member2", 0))
	for _, c := range clusterNames {
		manifest(ctx, c, cm, nil)
	}
	return cm, rb
}

// webTemplate creates an opted-in namespace holding a 2-replica Deployment "web".
func webTemplate(ctx context.Context, ns string) *appsv1.Deployment {
	GinkgoHelper()
	env.TemplateNamespace(ctx, ns)
	web := fleettest.Deployment(ns, "web", 2)
	Expect(env.Host.Create(ctx, web)).To(Succeed())
	return web
}

// overrideWeb creates an OverridePolicy of the Deployment "web" with one rule for one cluster.
func overrideWeb(ctx context.Context, ns, name, cluster string, o policyv1alpha1.Overriders) *policyv1alpha1.OverridePolicy {
	GinkgoHelper()
	op := &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1alpha1.OverrideSpec{ResourceSelectors: deploymentSelector("web"),
			OverrideRules: []policyv1alpha1.RuleWithCluster{{TargetCluster: onCluster(cluster), Overriders: o}}}}
	Expect(env.Host.Create(ctx, op)).To(Succeed())
	return op
}

var _ = Describe("Rendering Works", func() {
	It("writes one Work per scheduled cluster, with the template pruned and its replicas revised per cluster", func(ctx SpecContext) {
		ns := "bind-basic"
		env.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 4)
		// What the detector and the host put on a template, which must not reach members.
		web.Labels = map[string]string{"app": "web", wellknown.PropagationPolicyPermanentIDLabel: "some-policy-id"}
		web.Annotations = map[string]string{wellknown.PropagationPolicyNameAnnotation: "pp",
			"kubectl.kubernetes.io/last-applied-configuration": "{}"}
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		web.Status = appsv1.DeploymentStatus{Replicas: 4, ObservedGeneration: 1}
		Expect(env.Host.Status().Update(ctx, web)).To(Succeed())

		rb := bindingFor(ctx, web, 4, true, fleettest.Scheduled("member1", 1, "member2", 3))
		for _, c := range []struct {
			cluster  string
			replicas int64
		}{{"member1", 1}, {"member2", 3}} {
			w, m := manifest(ctx, c.cluster, web, nil)
			Expect(w.Labels).To(HaveKeyWithValue(wellknown.ResourceBindingPermanentIDLabel, rb.GetLabels()[wellknown.ResourceBindingPermanentIDLabel]))
			Expect(w.Labels).To(HaveKeyWithValue(wellknown.ManagedLabel, wellknown.ManagedLabelValue))
			Expect(w.Labels).To(HaveKeyWithValue(wellknown.WorkPermanentIDLabel, Not(BeEmpty())))
			Expect(w.Annotations).To(HaveKeyWithValue(wellknown.ResourceBindingNamespaceAnnotation, ns))
			Expect(w.Annotations).To(HaveKeyWithValue(wellknown.ResourceBindingNameAnnotation, "web-deployment"))
			Expect(w.Annotations).NotTo(Or(HaveKey(wellknown.AppliedOverridesAnnotation), HaveKey(wellknown.AppliedClusterOverridesAnnotation)))
			Expect(w.Finalizers).To(ConsistOf(wellknown.ExecutionControllerFinalizer))
			Expect(w.Spec.SuspendDispatching).To(BeNil())
			Expect(w.Spec.PreserveResourcesOnDeletion).To(BeNil())

			Expect(replicasOf(Default, m)).To(Equal(c.replicas))
			Expect(m.Object).NotTo(HaveKey("status"))
			Expect(m.Object["metadata"]).NotTo(Or(HaveKey("uid"), HaveKey("resourceVersion"), HaveKey("generation"),
				HaveKey("creationTimestamp"), HaveKey("managedFields")))
			Expect(m.GetLabels()).To(Equal(map[string]string{"app": "web", wellknown.ManagedLabel: wellknown.ManagedLabelValue}))
			Expect(m.GetAnnotations()).To(Equal(map[string]string{
				wellknown.WorkNamespaceAnnotation:              w.Namespace,
				wellknown.WorkNameAnnotation:                   w.Name,
				wellknown.ResourceTemplateUIDAnnotation:        string(web.UID),
				wellknown.ResourceTemplateGenerationAnnotation: "1",
			}))
		}
		By("following a new schedule")
		patch := client.MergeFrom(rb.DeepCopyObject().(client.Object))
		bindings.Spec(rb).Clusters = fleettest.Scheduled("member1", 2, "member2", 2)
		Expect(env.Host.Patch(ctx, rb, patch)).To(Succeed())
		for _, c := range clusterNames {
			manifest(ctx, c, web, func(g Gomega, _ *workv1alpha1.Work, m *unstructured.Unstructured) {
				g.Expect(replicasOf(g, m)).To(Equal(int64(2)))
			})
		}
		By("telling the Works written anew, and not the ones created (one success event per propagation)")
		Eventually(func(g Gomega) []string { return env.EventReasons(ctx, g, rb) }).WithContext(ctx).
			Should(ContainElement(wellknown.EventReasonSyncWorkSucceed))
		// Events are sent in the order they are recorded: one for the creation would be here.
		var synced []string
		for _, e := range env.Events(ctx, Default, rb) {
			if e.Reason == wellknown.EventReasonSyncWorkSucceed {
				synced = append(synced, e.Note)
			}
		}
		Expect(synced).To(ConsistOf("Synced Works to member1, member2"))
	})

	It("finds the override policies that select a template by kind, by label or with no selectors, and no others", func(ctx SpecContext) {
		ns := "bind-override-index"
		env.TemplateNamespace(ctx, ns)
		web := fleettest.Deployment(ns, "web", 2)
		web.Labels = map[string]string{"tier": "front"}
		Expect(env.Host.Create(ctx, web)).To(Succeed())
		addLabel := func(name string, sels []policyv1alpha1.ResourceSelector) {
			Expect(env.Host.Create(ctx, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: policyv1alpha1.OverrideSpec{ResourceSelectors: sels, OverrideRules: []policyv1alpha1.RuleWithCluster{{
					Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
						{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{name: "yes"}}}}}}}})).To(Succeed())
		}
		addLabel("everything", nil)
		addLabel("by-kind", []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}})
		addLabel("by-label", []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}}})
		addLabel("other-label", []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "back"}}}})
		addLabel("other-name", deploymentSelector("api"))
		addLabel("other-kind", []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}})
		addLabel("other-version", []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1beta2", Kind: "Deployment", Name: "web"}})

		bindingFor(ctx, web, 2, true, fleettest.Scheduled("member1", 2))
		_, m := manifest(ctx, "member1", web, nil)
		Expect(m.GetLabels()).To(And(HaveKey("everything"), HaveKey("by-kind"), HaveKey("by-label")))
		Expect(m.GetLabels()).NotTo(Or(HaveKey("other-label"), HaveKey("other-name"), HaveKey("other-kind"), HaveKey("other-version")))
	})

	It("applies ClusterOverridePolicies and OverridePolicies per cluster and records them on the Work", func(ctx SpecContext) {
		ns := "bind-overrides"
		web := webTemplate(ctx, ns)
		op := overrideWeb(ctx, ns, "mirror", "member1", policyv1alpha1.Overriders{
			ImageOverrider:  []policyv1alpha1.ImageOverrider{{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "mirror.example.com"}},
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"tier": "gold"}}},
		})
		cop := &policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: "bind-overrides-note"},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"}},
				OverrideRules: []policyv1alpha1.RuleWithCluster{{TargetCluster: onCluster("member2"), Overriders: policyv1alpha1.Overriders{
					AnnotationsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"note": "from-cop"}}},
				}}}}}
		Expect(env.Host.Create(ctx, cop)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(env.Host.Delete(ctx, cop)).To(Succeed()) })

		bindingFor(ctx, web, 2, true, fleettest.Scheduled("member1", 1, "member2", 1))
		w1, m1 := manifest(ctx, "member1", web, nil)
		Expect(imageOf(Default, m1)).To(Equal("mirror.example.com/pause:3.10"))
		Expect(m1.GetLabels()).To(HaveKeyWithValue("tier", "gold"))
		Expect(m1.GetAnnotations()).NotTo(HaveKey("note"))
		var applied []overrides.AppliedOverrider
		Expect(json.Unmarshal([]byte(w1.Annotations[wellknown.AppliedOverridesAnnotation]), &applied)).To(Succeed())
		Expect(applied).To(ConsistOf(overrides.AppliedOverrider{PolicyName: "mirror", Overriders: op.Spec.OverrideRules[0].Overriders}))
		Expect(w1.Annotations).NotTo(HaveKey(wellknown.AppliedClusterOverridesAnnotation))

		w2, m2 := manifest(ctx, "member2", web, nil)
		Expect(imageOf(Default, m2)).To(Equal(fleettest.Image))
		Expect(m2.GetLabels()).NotTo(HaveKey("tier"))
		Expect(m2.GetAnnotations()).To(HaveKeyWithValue("note", "from-cop"))
		Expect(w2.Annotations).NotTo(HaveKey(wellknown.AppliedOverridesAnnotation))
		Expect(w2.Annotations).To(HaveKeyWithValue(wellknown.AppliedClusterOverridesAnnotation, ContainSubstring(`"policyName":"bind-overrides-note"`)))

		By("re-rendering when an OverridePolicy changes")
		patch := client.MergeFrom(op.DeepCopy())
		op.Spec.OverrideRules[0].Overriders.LabelsOverrider[0].Value = map[string]string{"tier": "silver"}
		Expect(env.Host.Patch(ctx, op, patch)).To(Succeed())
		manifest(ctx, "member1", web, func(g Gomega, _ *workv1alpha1.Work, m *unstructured.Unstructured) {
			g.Expect(m.GetLabels()).To(HaveKeyWithValue("tier", "silver"))
		})

		By("dropping the record when the policy goes")
		Expect(env.Host.Delete(ctx, op)).To(Succeed())
		manifest(ctx, "member1", web, func(g Gomega, w *workv1alpha1.Work, m *unstructured.Unstructured) {
			g.Expect(m.GetLabels()).NotTo(HaveKey("tier"))
			g.Expect(imageOf(g, m)).To(Equal(fleettest.Image))
			g.Expect(w.Annotations).NotTo(HaveKey(wellknown.AppliedOverridesAnnotation))
		})
	})

	It("reports an override that cannot be applied as Overridden=False, and withholds only that cluster's Work", func(ctx SpecContext) {
		ns := "bind-override-error"
		web := webTemplate(ctx, ns)
		op := overrideWeb(ctx, ns, "broken", "member1", policyv1alpha1.Overriders{
			Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/noSuchField", Operator: policyv1alpha1.OverriderOpReplace,
				Value: apiextensionsv1.JSON{Raw: []byte(`1`)}}},
		})

		rb := bindingFor(ctx, web, 2, true, fleettest.Scheduled("member1", 1, "member2", 1))
		Eventually(func(g Gomega) {
			c := overridden(ctx, g, rb)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(wellknown.ReasonOverrideFailed))
			g.Expect(c.Message).To(And(ContainSubstring("member1"), ContainSubstring("broken"), ContainSubstring("/spec/noSuchField")))
			g.Expect(c.ObservedGeneration).To(Equal(rb.GetGeneration()))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) []string { return env.EventReasons(ctx, g, rb) }).WithContext(ctx).
			Should(ContainElement(wellknown.EventReasonApplyOverrideFailed))
		manifest(ctx, "member2", web, nil)
		Expect(fleettest.Gone(ctx, env.Host, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
			Namespace: workKey("member1", web).Namespace, Name: workKey("member1", web).Name}})()).To(BeTrue(),
			"no half-overridden Work for member1")

		By("fixing the policy")
		patch := client.MergeFrom(op.DeepCopy())
		op.Spec.OverrideRules[0].Overriders.Plaintext[0] = policyv1alpha1.PlaintextOverrider{Path: "/spec/minReadySeconds",
			Operator: policyv1alpha1.OverriderOpAdd, Value: apiextensionsv1.JSON{Raw: []byte(`5`)}}
		Expect(env.Host.Patch(ctx, op, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			c := overridden(ctx, g, rb)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(wellknown.ReasonOverrideSucceeded))
		}).WithContext(ctx).Should(Succeed())
		manifest(ctx, "member1", web, func(g Gomega, _ *workv1alpha1.Work, m *unstructured.Unstructured) {
			g.Expect(m.Object["spec"]).To(HaveKeyWithValue("minReadySeconds", BeNumerically("==", 5)))
		})
	})

	It("renders a ClusterResourceBinding's Works", func(ctx SpecContext) {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bind-reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
		Expect(env.Host.Create(ctx, role)).To(Succeed())
		crb := bindingFor(ctx, role, 0, true, fleettest.Scheduled("member1", 0, "member2", 0))
		for _, c := range clusterNames {
			w, m := manifest(ctx, c, role, nil)
			Expect(w.Labels).To(HaveKeyWithValue(wellknown.ClusterResourceBindingPermanentIDLabel,
				crb.GetLabels()[wellknown.ClusterResourceBindingPermanentIDLabel]))
			Expect(w.Annotations).To(HaveKeyWithValue(wellknown.ClusterResourceBindingNameAnnotation, "bind-reader-clusterrole"))
			Expect(m.GetKind()).To(Equal("ClusterRole"))
			Expect(m.Object).To(HaveKey("rules"))
		}
	})
})

var _ = Describe("Removing Works", func() {
	It("deletes the Work of a cluster no longer scheduled, and only that one", func(ctx SpecContext) {
		ns := "bind-unschedule"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		rb := bindingFor(ctx, cm, 0, true, fleettest.Scheduled("member1", 0, "member2", 0))
		w1, _ := manifest(ctx, "member1", cm, nil)
		manifest(ctx, "member2", cm, nil)

		patch := client.MergeFrom(rb.DeepCopyObject().(client.Object))
		bindings.Spec(rb).Clusters = fleettest.Scheduled("member1", 0)
		Expect(env.Host.Patch(ctx, rb, patch)).To(Succeed())
		expectWorkDeleted(ctx, workKey("member2", cm), false)
		Consistently(fleettest.Gone(ctx, env.Host, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
			Namespace: workKey("member2", cm).Namespace, Name: workKey("member2", cm).Name}})).WithContext(ctx).Should(BeTrue(),
			"not recreated")
		Expect(getWork(ctx, Default, "member1", cm).UID).To(Equal(w1.UID))
	})

	// Regression (session 16's soak): preserveResourcesOnDeletion was copied onto every Work,
	// so a binding that preserves resources left a running copy, still labelled as managed, on
	// every cluster its placement moved away from. Preserving is for the binding's deletion.
	It("deletes the member objects of a cluster no longer scheduled, also when the binding preserves resources on deletion", func(ctx SpecContext) {
		ns := "bind-unschedule-preserve"
		cm, rb := boundEverywhere(ctx, ns)
		Expect(env.Host.Patch(ctx, rb, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"preserveResourcesOnDeletion":true}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			env.Get(ctx, g, rb)
			g.Expect(ptr.Deref(bindings.Spec(rb).PreserveResourcesOnDeletion, false)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) *bool { return getWork(ctx, g, "member1", cm).Spec.PreserveResourcesOnDeletion }).
			WithContext(ctx).WithTimeout(2*time.Second).Should(BeNil(), "the Works are told to preserve only when the binding goes")

		By("a Work an earlier version told to preserve")
		w2 := getWork(ctx, Default, "member2", cm)
		Expect(env.Host.Patch(ctx, w2, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"preserveResourcesOnDeletion":true}}`)))).To(Succeed())
		patch := client.MergeFrom(rb.DeepCopyObject().(client.Object))
		bindings.Spec(rb).Clusters = fleettest.Scheduled("member1", 0)
		Expect(env.Host.Patch(ctx, rb, patch)).To(Succeed())
		expectWorkDeleted(ctx, workKey("member2", cm), false)

		By("the binding deleted: now its Works keep their member objects")
		Expect(env.Host.Delete(ctx, rb)).To(Succeed())
		expectWorkDeleted(ctx, workKey("member1", cm), true)
	})

	It("writes again a Work deleted by hand", func(ctx SpecContext) {
		ns := "bind-recreate"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		bindingFor(ctx, cm, 0, true, fleettest.Scheduled("member1", 0))
		old, _ := manifest(ctx, "member1", cm, nil)

		Expect(env.Host.Delete(ctx, old)).To(Succeed())
		env.Release(ctx, old) // as the execution controller would once the member object is gone
		manifest(ctx, "member1", cm, func(g Gomega, w *workv1alpha1.Work, _ *unstructured.Unstructured) {
			g.Expect(w.UID).NotTo(Equal(old.UID))
			g.Expect(w.DeletionTimestamp).To(BeNil())
		})
	})

	It("waits without a warning for a cluster's execution namespace that is still going, and writes the Work once it is made anew", func(ctx SpecContext) {
		// A cluster unjoined and joined again at once: the old execution namespace is still
		// being emptied. This host runs no namespace controller, so a deleted namespace stays
		// Terminating until the test finalizes it.
		const cluster = "rejoined"
		env.CreateClusters(ctx, cluster)
		es := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wellknown.ExecutionNamespace(cluster)}}
		Expect(env.Host.Delete(ctx, es)).To(Succeed())
		ns := "bind-rejoined"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		rb := bindingFor(ctx, cm, 0, true, fleettest.Scheduled("member1", 0, cluster, 0))
		manifest(ctx, "member1", cm, nil) // the binding was reconciled: both Works were tried
		Consistently(func(g Gomega) []string { return env.EventReasons(ctx, g, rb) }).WithContext(ctx).
			ShouldNot(ContainElement(wellknown.EventReasonSyncWorkFailed))

		By("the namespace gone and made anew, as the cluster controller does")
		kube, err := kubernetes.NewForConfig(env.Fleet.Host.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(es), es)).To(Succeed())
		es.Spec.Finalizers = nil
		_, err = kube.CoreV1().Namespaces().Finalize(ctx, es, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(fleettest.Gone(ctx, env.Host, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: es.Name}})).WithContext(ctx).Should(BeTrue())
		env.CreateNamespace(ctx, es.Name, nil)
		manifest(ctx, cluster, cm, nil)
		Expect(env.EventReasons(ctx, Default, rb)).NotTo(ContainElement(wellknown.EventReasonSyncWorkFailed))
	})

	It("deletes the Works of a deleted binding, and then lets the binding go", func(ctx SpecContext) {
		ns := "bind-delete"
		cm, rb := boundEverywhere(ctx, ns)
		Expect(env.Host.Delete(ctx, rb)).To(Succeed())
		for _, c := range clusterNames {
			expectWorkDeleted(ctx, workKey(c, cm), false)
		}
		Eventually(fleettest.Gone(ctx, env.Host, rb)).WithContext(ctx).Should(BeTrue())
	})

	// A preserving binding that goes while its template stays (the detector unbinds it:
	// preserve, then delete at once) keeps the member objects managed for the template's next
	// binding; one whose template was deleted releases them, as Karmada does.
	DescribeTable("tells the Works of a deleted binding that preserves resources to keep their member objects",
		func(ctx SpecContext, ns string, templateDeleted bool) {
			cm, rb := boundEverywhere(ctx, ns)
			Expect(env.Host.Patch(ctx, rb, client.RawPatch(types.MergePatchType,
				[]byte(`{"spec":{"preserveResourcesOnDeletion":true}}`)))).To(Succeed())
			if templateDeleted {
				Expect(env.Host.Delete(ctx, cm)).To(Succeed())
			}
			Expect(env.Host.Delete(ctx, rb)).To(Succeed())
			for _, c := range clusterNames {
				w := expectWorkDeleted(ctx, workKey(c, cm), true)
				if templateDeleted {
					Expect(w.Annotations).NotTo(HaveKey(wellknown.KeepManagedAnnotation), "released")
				} else {
					Expect(w.Annotations).To(HaveKeyWithValue(wellknown.KeepManagedAnnotation, "true"), "kept managed")
				}
			}
			Eventually(fleettest.Gone(ctx, env.Host, rb)).WithContext(ctx).Should(BeTrue())
		},
		Entry("managed, while the template stays", "bind-delete-preserve", false),
		Entry("released, once the template is deleted", "bind-delete-release", true),
	)
})

var _ = Describe("Bindings created without the binding controller's finalizer", func() {
	// Regression (issue 9): a binding created without the finalizer karmada.io/binding-controller
	// (by kubectl or Karmada tooling) got it added by a patch that changes no generation, label
	// or annotation, so the predicates dropped the update and nothing rendered its Works.
	It("renders their Works all the same", func(ctx SpecContext) {
		ns := "bind-no-finalizer"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "cfg", map[string]string{"k": "v"})
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		rb := bindingFor(ctx, cm, 0, false, fleettest.Scheduled("member1", 0))
		Eventually(func(g Gomega) {
			env.Get(ctx, g, rb)
			g.Expect(rb.GetFinalizers()).To(ContainElement(wellknown.BindingControllerFinalizer))
		}).WithContext(ctx).Should(Succeed())
		manifest(ctx, "member1", cm, nil)
	})
})
