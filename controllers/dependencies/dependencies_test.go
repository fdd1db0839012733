package dependencies_test

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

const timeout = 20 * time.Second

// app is a Deployment whose pods use a ConfigMap (env and a volume), a Secret (envFrom) and
// a ServiceAccount.
func app(ns, name, configMap string) *appsv1.Deployment {
	d := fleettest.Deployment(ns, name, 2)
	spec := &d.Spec.Template.Spec
	spec.ServiceAccountName = "runner"
	spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}
	spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "credentials"}}}}
	return d
}

// propagate creates a PropagationPolicy with propagateDeps for the named Deployments.
func propagate(ctx context.Context, ns, name string, deployments ...string) *policyv1alpha1.PropagationPolicy {
	GinkgoHelper()
	pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1alpha1.PropagationSpec{PropagateDeps: true}}
	for _, d := range deployments {
		pp.Spec.ResourceSelectors = append(pp.Spec.ResourceSelectors, policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: d})
	}
	Expect(env.Host.Create(ctx, pp)).To(Succeed())
	return pp
}

// schedule plays the scheduler: it sets the workload binding's clusters once the detector
// has written it.
func schedule(ctx context.Context, ns, kind, name string, clusters ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		rb := &workv1alpha2.ResourceBinding{}
		g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: detector.BindingName(kind, name)}, rb)).To(Succeed())
		before := rb.DeepCopy()
		rb.Spec.Clusters = nil
		for _, c := range clusters {
			rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: rb.Spec.Replicas})
		}
		g.Expect(env.Host.Patch(ctx, rb, client.MergeFrom(before))).To(Succeed())
	}, timeout).Should(Succeed())
}

func bindingOf(ctx context.Context, g Gomega, ns, kind, name string) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{}
	g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: detector.BindingName(kind, name)}, rb)).To(Succeed())
	return rb
}

func requiredBy(rb *workv1alpha2.ResourceBinding) map[string][]string {
	out := map[string][]string{}
	for _, s := range rb.Spec.RequiredBy {
		var clusters []string
		for _, c := range s.Clusters {
			clusters = append(clusters, c.Name)
		}
		out[s.Name] = clusters
	}
	return out
}

// workClusters lists the clusters that have a live Work of the template.
func workClusters(ctx context.Context, g Gomega, kind, ns, name string) []string {
	var out []string
	for _, c := range []string{"member1", "member2"} {
		w := &workv1alpha1.Work{}
		err := env.Host.Get(ctx, client.ObjectKey{Namespace: wellknown.ExecutionNamespace(c), Name: bindings.WorkName(kind, ns, name)}, w)
		if apierrors.IsNotFound(err) {
			continue
		}
		g.Expect(err).NotTo(HaveOccurred())
		if w.DeletionTimestamp == nil {
			out = append(out, c)
		}
	}
	return out
}

func secret(ns, name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"password": "p"}}
}

func serviceAccount(ns, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

var _ = Describe("propagateDeps", func() {
	It("gives each dependency an attached binding that follows its workloads, shared, and released cluster by cluster", func(ctx SpecContext) {
		const ns = "deps-shared"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "settings", map[string]string{"mode": "a"})
		for _, o := range []client.Object{cm, secret(ns, "credentials"), serviceAccount(ns, "runner")} {
			Expect(env.Host.Create(ctx, o)).To(Succeed())
		}
		first, second := app(ns, "first", "settings"), app(ns, "second", "settings")
		Expect(env.Host.Create(ctx, first)).To(Succeed())
		Expect(env.Host.Create(ctx, second)).To(Succeed())
		propagate(ctx, ns, "apps", "first", "second")
		schedule(ctx, ns, "Deployment", "first", "member1")
		schedule(ctx, ns, "Deployment", "second", "member2")

		By("each dependency gets one binding, without a placement, required by both workloads")
		Eventually(func(g Gomega) {
			for _, d := range [][2]string{{"ConfigMap", "settings"}, {"Secret", "credentials"}, {"ServiceAccount", "runner"}} {
				rb := bindingOf(ctx, g, ns, d[0], d[1])
				g.Expect(rb.Spec.Placement).To(BeNil())
				g.Expect(rb.Labels).NotTo(HaveKey(wellknown.PropagationPolicyPermanentIDLabel))
				g.Expect(requiredBy(rb)).To(Equal(map[string][]string{
					"first-deployment": {"member1"}, "second-deployment": {"member2"},
				}), d[0])
				g.Expect(metav1.GetControllerOf(rb)).NotTo(BeNil())
				g.Expect(metav1.GetControllerOf(rb).Kind).To(Equal(d[0]))
				g.Expect(workClusters(ctx, g, d[0], ns, d[1])).To(ConsistOf("member1", "member2"), d[0])
			}
		}, timeout).Should(Succeed())

		By("a change to the ConfigMap reaches its Works")
		env.Get(ctx, Default, cm)
		cm.Data["mode"] = "b"
		Expect(env.Host.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			w := &workv1alpha1.Work{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: wellknown.ExecutionNamespace("member1"),
				Name: bindings.WorkName("ConfigMap", ns, "settings")}, w)).To(Succeed())
			m := fleettest.Manifest(g, w, 0)
			g.Expect(m.Object["data"]).To(HaveKeyWithValue("mode", "b"))
		}, timeout).Should(Succeed())

		By("a workload that moves takes its dependencies along; the other's cluster keeps them")
		schedule(ctx, ns, "Deployment", "first", "member2")
		Eventually(func(g Gomega) []string {
			return workClusters(ctx, g, "ConfigMap", ns, "settings")
		}, timeout).Should(ConsistOf("member2"))

		By("deleting one workload keeps what the other needs; deleting both removes the dependencies")
		Expect(env.Host.Delete(ctx, second)).To(Succeed())
		env.Release(ctx, bindingOf(ctx, Default, ns, "Deployment", "second"))
		Eventually(func(g Gomega) map[string][]string {
			return requiredBy(bindingOf(ctx, g, ns, "ConfigMap", "settings"))
		}, timeout).Should(Equal(map[string][]string{"first-deployment": {"member2"}}))
		Expect(env.Host.Delete(ctx, first)).To(Succeed())
		env.Release(ctx, bindingOf(ctx, Default, ns, "Deployment", "first"))
		for _, d := range [][2]string{{"ConfigMap", "settings"}, {"Secret", "credentials"}, {"ServiceAccount", "runner"}} {
			rb := &workv1alpha2.ResourceBinding{}
			rb.Namespace, rb.Name = ns, detector.BindingName(d[0], d[1])
			Eventually(func(g Gomega) {
				cur := &workv1alpha2.ResourceBinding{}
				err := env.Host.Get(ctx, client.ObjectKeyFromObject(rb), cur)
				if apierrors.IsNotFound(err) {
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cur.DeletionTimestamp).NotTo(BeNil(), "%s's binding is deleted once no workload needs it", d[0])
			}, timeout).Should(Succeed())
		}
	})

	It("reports a dependency that does not exist yet, and propagates it when it appears", func(ctx SpecContext) {
		const ns = "deps-missing"
		env.TemplateNamespace(ctx, ns)
		Expect(env.Host.Create(ctx, secret(ns, "credentials"))).To(Succeed())
		Expect(env.Host.Create(ctx, serviceAccount(ns, "runner"))).To(Succeed())
		d := app(ns, "web", "later")
		Expect(env.Host.Create(ctx, d)).To(Succeed())
		propagate(ctx, ns, "web", "web")
		schedule(ctx, ns, "Deployment", "web", "member1")

		Eventually(func(g Gomega) {
			var msgs []string
			for _, ev := range env.Events(ctx, g, d) {
				if ev.Reason == wellknown.EventReasonDependencyMissing {
					msgs = append(msgs, ev.Note)
				}
			}
			g.Expect(msgs).To(ContainElement(ContainSubstring("ConfigMap " + ns + "/later")))
		}, timeout).Should(Succeed())
		Consistently(func(g Gomega) []string { return workClusters(ctx, g, "ConfigMap", ns, "later") }, 2*time.Second).Should(BeEmpty())

		cm := fleettest.ConfigMap(ns, "later", map[string]string{"k": "v"})
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) []string { return workClusters(ctx, g, "ConfigMap", ns, "later") }, timeout).Should(ConsistOf("member1"))
		Expect(env.EventReasons(ctx, Default, cm)).NotTo(ContainElement(wellknown.EventReasonApplyPolicyFailed))
	})

	It("lets a dependency's own policy win, adds the workloads' clusters, and keeps the dependency when the policy goes", func(ctx SpecContext) {
		const ns = "deps-policy"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "shared", map[string]string{"k": "v"})
		for _, o := range []client.Object{cm, secret(ns, "credentials"), serviceAccount(ns, "runner")} {
			Expect(env.Host.Create(ctx, o)).To(Succeed())
		}
		Expect(env.Host.Create(ctx, app(ns, "api", "shared"))).To(Succeed())
		propagate(ctx, ns, "api", "api")
		schedule(ctx, ns, "Deployment", "api", "member1")
		Eventually(func(g Gomega) []string { return workClusters(ctx, g, "ConfigMap", ns, "shared") }, timeout).Should(ConsistOf("member1"))

		own := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared-config"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors:  []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "shared"}},
				ConflictResolution: policyv1alpha1.ConflictOverwrite,
			}}
		Expect(env.Host.Create(ctx, own)).To(Succeed())
		By("the policy claims the binding; the requiredBy entries stay")
		Eventually(func(g Gomega) {
			rb := bindingOf(ctx, g, ns, "ConfigMap", "shared")
			g.Expect(rb.Labels).To(HaveKey(wellknown.PropagationPolicyPermanentIDLabel))
			g.Expect(rb.Spec.Placement).NotTo(BeNil())
			g.Expect(rb.Spec.ConflictResolution).To(Equal(policyv1alpha1.ConflictOverwrite))
			g.Expect(requiredBy(rb)).To(HaveKey("api-deployment"))
		}, timeout).Should(Succeed())
		schedule(ctx, ns, "ConfigMap", "shared", "member2")
		Eventually(func(g Gomega) []string { return workClusters(ctx, g, "ConfigMap", ns, "shared") }, timeout).Should(ConsistOf("member1", "member2"))

		By("deleting the policy leaves the dependency where the workload needs it, and where the policy put it")
		// As any template whose policy goes: its binding keeps its clusters until it is deleted.
		Expect(env.Host.Delete(ctx, own)).To(Succeed())
		Eventually(func(g Gomega) {
			rb := bindingOf(ctx, g, ns, "ConfigMap", "shared")
			g.Expect(rb.DeletionTimestamp).To(BeNil())
			g.Expect(rb.Labels).NotTo(HaveKey(wellknown.PropagationPolicyPermanentIDLabel))
			g.Expect(rb.Spec.Placement).To(BeNil())
			g.Expect(workClusters(ctx, g, "ConfigMap", ns, "shared")).To(ConsistOf("member1", "member2"))
		}, timeout).Should(Succeed())

		By("the workload letting go of it keeps it where the policy put it, until it is deleted")
		Expect(env.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}})).To(Succeed())
		Eventually(func(g Gomega) {
			rb := bindingOf(ctx, g, ns, "ConfigMap", "shared")
			g.Expect(requiredBy(rb)).To(BeEmpty())
			g.Expect(workClusters(ctx, g, "ConfigMap", ns, "shared")).To(ConsistOf("member2"))
		}, timeout).Should(Succeed())
	})

	It("takes Karmada's deprecated association: true as propagateDeps", func(ctx SpecContext) {
		const ns = "deps-association"
		env.TemplateNamespace(ctx, ns)
		for _, o := range []client.Object{fleettest.ConfigMap(ns, "settings", nil), secret(ns, "credentials"), serviceAccount(ns, "runner")} {
			Expect(env.Host.Create(ctx, o)).To(Succeed())
		}
		Expect(env.Host.Create(ctx, app(ns, "old", "settings"))).To(Succeed())
		pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
			Spec: policyv1alpha1.PropagationSpec{Association: true,
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "old"}}}}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		schedule(ctx, ns, "Deployment", "old", "member1")
		Eventually(func(g Gomega) []string { return workClusters(ctx, g, "ConfigMap", ns, "settings") }, timeout).Should(ConsistOf("member1"))
	})

	It("does nothing for policies without propagateDeps", func(ctx SpecContext) {
		const ns = "deps-off"
		env.TemplateNamespace(ctx, ns)
		Expect(env.Host.Create(ctx, fleettest.ConfigMap(ns, "settings", nil))).To(Succeed())
		Expect(env.Host.Create(ctx, app(ns, "plain", "settings"))).To(Succeed())
		pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "plain"}}}}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		schedule(ctx, ns, "Deployment", "plain", "member1")
		Eventually(func(g Gomega) []string { return workClusters(ctx, g, "Deployment", ns, "plain") }, timeout).Should(ConsistOf("member1"))
		Consistently(func() bool {
			list := &workv1alpha2.ResourceBindingList{}
			Expect(env.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			return slices.ContainsFunc(list.Items, func(rb workv1alpha2.ResourceBinding) bool { return rb.Spec.Resource.Kind == "ConfigMap" })
		}, 2*time.Second).Should(BeFalse())
	})
})
