package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

func work(ctx context.Context, g Gomega, cluster, ns, name string) *workv1alpha1.Work {
	w := &workv1alpha1.Work{}
	g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: wellknown.ExecutionNamespace(cluster),
		Name: bindings.WorkName("Deployment", ns, name)}, w)).To(Succeed())
	return w
}

func image(g Gomega, w *workv1alpha1.Work) string {
	m := fleettest.Manifest(g, w, 0)
	d := &appsv1.Deployment{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object, d)).To(Succeed())
	return d.Spec.Template.Spec.Containers[0].Image
}

// report plays execution and work status: the Work is applied, and its Deployment reports
// observedGeneration and health.
func report(ctx context.Context, cluster, ns, name string, observed int64, health workv1alpha1.ResourceHealth) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		w := work(ctx, g, cluster, ns, name)
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: wellknown.WorkConditionApplied, Status: metav1.ConditionTrue,
			Reason: wellknown.ReasonAppliedSuccessful, ObservedGeneration: w.Generation})
		st, _ := json.Marshal(map[string]any{"observedGeneration": observed, "replicas": 2, "availableReplicas": 2, "updatedReplicas": 2})
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
			Identifier: workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: ns, Name: name},
			Status:     &runtime.RawExtension{Raw: st}, Health: health,
		}}
		g.Expect(env.Host.Status().Update(ctx, w)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

func getRollout(ctx context.Context, g Gomega, ns, name string) *rolloutsv1alpha1.Rollout {
	ro := &rolloutsv1alpha1.Rollout{}
	g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-deployment"}, ro)).To(Succeed())
	return ro
}

// edit changes the template's image and, as the detector would, the binding's resource
// version (which brings the binding controller back).
func edit(ctx context.Context, d *appsv1.Deployment, rb client.Object, img string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.Template.Spec.Containers[0].Image = img
		g.Expect(env.Host.Update(ctx, d)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		rb.(*workv1alpha2.ResourceBinding).Spec.Resource.ResourceVersion = d.ResourceVersion
		g.Expect(env.Host.Update(ctx, rb)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

var _ = Describe("Rollout controller", func() {
	It("gates each cluster's Work by stage, soaks, promotes, reports overlapping policies, and lets go when the policy goes", func(ctx context.Context) {
		ns := env.TemplateNamespace(ctx, "staged").Name
		const name = "web"
		sel := []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}}
		policy := &rolloutsv1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary"},
			Spec: rolloutsv1alpha1.RolloutPolicySpec{ResourceSelectors: sel, Stages: []rolloutsv1alpha1.Stage{
				{Name: "canary", Clusters: &rolloutsv1alpha1.StageClusters{Names: []string{"member1"}}, Soak: &metav1.Duration{Duration: time.Second}},
				{Name: "rest"},
			}}}
		Expect(env.Host.Create(ctx, policy)).To(Succeed())
		d := fleettest.Deployment(ns, name, 2)
		Expect(env.Host.Create(ctx, d)).To(Succeed())
		rb := env.Binding(d, 6, fleettest.Scheduled("member1", 2, "member2", 2, "member3", 2)...)
		Expect(env.Host.Create(ctx, rb)).To(Succeed())

		By("the first revision is the stable one, everywhere, and every Work carries it")
		var stable string
		Eventually(func(g Gomega) {
			ro := getRollout(ctx, g, ns, name)
			g.Expect(ro.Status.Phase).To(Equal(rolloutsv1alpha1.PhaseComplete))
			g.Expect(ro.Status.StableTemplate).NotTo(BeNil())
			stable = ro.Status.StableRevision
			g.Expect(ro.OwnerReferences).To(ConsistOf(HaveField("UID", rb.GetUID())))
			for _, c := range clusterNames {
				g.Expect(work(ctx, g, c, ns, name).Labels).To(HaveKeyWithValue(rolloutsv1alpha1.RevisionLabel, stable))
			}
		}).WithContext(ctx).Should(Succeed())
		for _, c := range clusterNames {
			report(ctx, c, ns, name, 1, workv1alpha1.ResourceHealthy)
		}
		orig := image(Default, work(ctx, Default, "member1", ns, name))
		Eventually(func(g Gomega) {
			for _, c := range getRollout(ctx, g, ns, name).Status.Clusters {
				g.Expect(c.Health).To(Equal("Healthy"), c.Name)
			}
		}).WithContext(ctx).Should(Succeed())

		By("an edit reaches the canary only")
		edit(ctx, d, rb, "registry.example/web:2")
		var next string
		Eventually(func(g Gomega) {
			ro := getRollout(ctx, g, ns, name)
			g.Expect(ro.Status.Phase).To(Equal(rolloutsv1alpha1.PhaseProgressing))
			next = ro.Status.Revision
			g.Expect(next).NotTo(Equal(stable))
			w := work(ctx, g, "member1", ns, name)
			g.Expect(w.Labels).To(HaveKeyWithValue(rolloutsv1alpha1.RevisionLabel, next))
			g.Expect(image(g, w)).To(Equal("registry.example/web:2"))
		}).WithContext(ctx).Should(Succeed())
		for _, c := range []string{"member2", "member3"} {
			w := work(ctx, Default, c, ns, name)
			Expect(w.Labels).To(HaveKeyWithValue(rolloutsv1alpha1.RevisionLabel, stable), c)
			Expect(image(Default, w)).To(Equal(orig), c)
		}

		By("health the member reported before it saw the new spec does not open the next stage")
		report(ctx, "member1", ns, name, 1, workv1alpha1.ResourceHealthy)
		Consistently(func(g Gomega) {
			ro := getRollout(ctx, g, ns, name)
			g.Expect(image(g, work(ctx, g, "member2", ns, name))).To(Equal(orig), "%+v", ro.Status)
		}).WithContext(ctx).Should(Succeed())

		By("once healthy on the new spec and soaked, the rest follow and the revision is stable")
		report(ctx, "member1", ns, name, 2, workv1alpha1.ResourceHealthy)
		Eventually(func(g Gomega) {
			for _, c := range []string{"member2", "member3"} {
				w := work(ctx, g, c, ns, name)
				g.Expect(w.Labels).To(HaveKeyWithValue(rolloutsv1alpha1.RevisionLabel, next))
				g.Expect(image(g, w)).To(Equal("registry.example/web:2"))
			}
		}).WithContext(ctx).Should(Succeed())
		report(ctx, "member2", ns, name, 2, workv1alpha1.ResourceHealthy)
		report(ctx, "member3", ns, name, 2, workv1alpha1.ResourceHealthy)
		Eventually(func(g Gomega) {
			ro := getRollout(ctx, g, ns, name)
			g.Expect(ro.Status.Phase).To(Equal(rolloutsv1alpha1.PhaseComplete))
			g.Expect(ro.Status.StableRevision).To(Equal(next))
			g.Expect(ro.Status.Stages[0].CompletedAt.Sub(ro.Status.Stages[0].StartedAt.Time)).To(BeNumerically(">=", time.Second))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.EventReasons(ctx, g, getRollout(ctx, g, ns, name))).To(ContainElements(
				rolloutsv1alpha1.EventStageStarted, rolloutsv1alpha1.EventStageCompleted, rolloutsv1alpha1.EventComplete))
		}).WithContext(ctx).Should(Succeed())

		By("a second policy selecting the template is reported; the namespaced one stays in force")
		crp := &rolloutsv1alpha1.ClusterRolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "all-deployments"},
			Spec: rolloutsv1alpha1.RolloutPolicySpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
				Stages: []rolloutsv1alpha1.Stage{{Name: "all"}}}}
		Expect(env.Host.Create(ctx, crp)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = env.Host.Delete(ctx, crp) })
		Eventually(func(g Gomega) {
			ro := getRollout(ctx, g, ns, name)
			c := meta.FindStatusCondition(ro.Status.Conditions, rolloutsv1alpha1.ConditionPolicyConflict)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(And(HavePrefix("RolloutPolicy/canary is in force"), ContainSubstring("ClusterRolloutPolicy/all-deployments")))
			g.Expect(ro.Status.Policy).To(Equal("RolloutPolicy/canary"))
		}).WithContext(ctx).Should(Succeed())

		By("without any policy, the Rollout goes")
		Expect(env.Host.Delete(ctx, crp)).To(Succeed())
		Expect(env.Host.Delete(ctx, policy)).To(Succeed())
		Eventually(func(g Gomega) {
			err := env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-deployment"}, &rolloutsv1alpha1.Rollout{})
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			g.Expect(err).To(HaveOccurred(), fmt.Sprint("the Rollout is still there"))
		}).WithContext(ctx).Should(Succeed())
	})
})
