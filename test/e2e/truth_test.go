package e2e

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/testing/argohealth"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// rolloutStatus is what `kubectl rollout status` says of a host object: kubectl's own status
// viewer, on the object as the host serves it.
func rolloutStatus(ctx context.Context, g Gomega, obj client.Object) (string, bool) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(obj), u)).To(Succeed())
	viewer, err := polymorphichelpers.StatusViewerFor(gvk.GroupKind())
	g.Expect(err).NotTo(HaveOccurred())
	msg, done, err := viewer.Status(u, 0)
	g.Expect(err).NotTo(HaveOccurred())
	return msg, done
}

// argoHealthOf is what Argo CD's built-in health check says of a host object.
func argoHealthOf(ctx context.Context, g Gomega, obj client.Object, gvk schema.GroupVersionKind) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(obj), u)).To(Succeed())
	h, err := argohealth.Health(u)
	g.Expect(err).NotTo(HaveOccurred())
	return h
}

// The host runs kube-controller-manager with --use-service-account-credentials=true and its
// volume binder on (the namespace controller's suite covers shared credentials).
var _ = Describe("The template tells the truth", Ordered, func() {
	const ns = "e2e-truth"
	var (
		app       *appsv1.Deployment
		templates []client.Object
	)
	deploymentGVK := appsv1.SchemeGroupVersion.WithKind("Deployment")

	BeforeAll(func(ctx SpecContext) {
		templateNamespace(ctx, ns)
		fleettest.EnsureImmediateStorageClass(ctx, env.Host)
		all := []string{"member1", "member2", "member3"}
		weights := []policyv1alpha1.StaticClusterWeight{}
		for _, m := range all {
			weights = append(weights, policyv1alpha1.StaticClusterWeight{
				TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}, Weight: 1})
		}
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "app"}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: all},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
						WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: weights},
					},
				},
			}})).To(Succeed())
		// The Job runs in every member; the Service, Ingress, CronJob, claim and PDB go to
		// member1. The rest of the host-controller bait (web's HPA, the StatefulSet, the
		// DaemonSet) has no policy and stays a held template.
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "batch/v1", Kind: "Job", Name: "batch"}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: all}},
			}})).To(Succeed())
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{
					{APIVersion: "v1", Kind: "Service"}, {APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
					{APIVersion: "batch/v1", Kind: "CronJob"}, {APIVersion: "v1", Kind: "PersistentVolumeClaim"},
					{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
				},
				Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
			}})).To(Succeed())

		// The apiserver enforces the hold's policies for a new namespace a moment after it is
		// labelled; a Job created before that would not get its spec.managedBy.
		start := time.Now()
		Eventually(func(g Gomega) {
			probe := fleettest.HostControllerTemplates(ns)[5].(*batchv1.Job)
			g.Expect(env.Host.Create(ctx, probe, client.DryRunAll)).To(Succeed())
			g.Expect(probe.Spec.ManagedBy).To(HaveValue(Equal(wellknown.JobManagedBy)))
		}).WithContext(ctx).WithPolling(100 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("the hold's Job policy applies to %s %s after it was labelled\n", ns, time.Since(start).Round(time.Millisecond))

		app = deploymentTemplate(ns, "app", 5)
		app.SetGroupVersionKind(deploymentGVK)
		templates = fleettest.HostControllerTemplates(ns)
		for _, t := range append([]client.Object{app.DeepCopy()}, templates...) {
			Expect(env.Host.Create(ctx, t)).To(Succeed())
		}
	})

	It("kubectl get deploy on the host shows the fleet's 5/5, and the binding 3/3 ready clusters", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(app), d)).To(Succeed())
			g.Expect(d.Status.Replicas).To(BeEquivalentTo(5))
			g.Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(5))
			g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(5))
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(5))
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-deployment"}, rb)).To(Succeed())
			g.Expect(rb.Status.ClustersReady).To(Equal("3/3"))
			_, done := rolloutStatus(ctx, g, app)
			g.Expect(done).To(BeTrue())
			g.Expect(argoHealthOf(ctx, g, app, deploymentGVK)).To(Equal(argohealth.Healthy))
		}).WithContext(ctx).Should(Succeed())
	})

	It("kubectl rollout status waits for every member after an image change, then returns", func(ctx SpecContext) {
		patchTemplate(ctx, app, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}}}`)
		msg, done := rolloutStatus(ctx, Default, app)
		Expect(done).To(BeFalse(), msg)
		start := time.Now()
		Eventually(func(g Gomega) bool {
			_, done := rolloutStatus(ctx, g, app)
			return done
		}).WithContext(ctx).Should(BeTrue())
		GinkgoWriter.Printf("rollout status returned %s after the image change\n", time.Since(start).Round(time.Millisecond))
		for _, m := range []string{"member1", "member2", "member3"} {
			d := &appsv1.Deployment{}
			Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(app), d)).To(Succeed())
			Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.28"), m)
		}
		Eventually(func(g Gomega) string { return argoHealthOf(ctx, g, app, deploymentGVK) }).
			WithContext(ctx).Should(Equal(argohealth.Healthy))
	})

	It("a Job shows its members' completions and Complete", func(ctx SpecContext) {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"}}
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Spec.ManagedBy).To(HaveValue(Equal(wellknown.JobManagedBy)))
			g.Expect(job.Status.Succeeded).To(BeEquivalentTo(3))
			var complete bool
			for _, c := range job.Status.Conditions {
				complete = complete || (c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue)
			}
			g.Expect(complete).To(BeTrue(), "conditions: %+v", job.Status.Conditions)
			g.Expect(argoHealthOf(ctx, g, job, batchv1.SchemeGroupVersion.WithKind("Job"))).To(Equal(argohealth.Healthy))
		}).WithContext(ctx).Should(Succeed())
		for _, m := range []string{"member1", "member2", "member3"} {
			mj := &batchv1.Job{}
			Expect(env.Members[m].Get(ctx, client.ObjectKeyFromObject(job), mj)).To(Succeed())
			Expect(mj.Spec.ManagedBy).To(BeNil(), "%s runs the Job with its own Job controller", m)
		}
	})

	It("a CronJob, LoadBalancer Service, Ingress, HPA, PVC and the rest start nothing on the host", func(ctx SpecContext) {
		// The CronJob fires within a minute, in member1 and (denied) on the host.
		Eventually(func(g Gomega) {
			jobs := &batchv1.JobList{}
			g.Expect(env.Members["member1"].List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
			var fromCron int
			for _, j := range jobs.Items {
				if len(j.OwnerReferences) > 0 && j.OwnerReferences[0].Kind == "CronJob" {
					fromCron++
				}
			}
			g.Expect(fromCron).To(BeNumerically(">", 0))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		fleettest.ExpectHostControllersKeptOff(ctx, Default, env.Host, ns, templates)
		logHoldDenials(ctx, len(templates)+1)
	})

	It("unlabelling the namespace starts nothing on the host", func(ctx SpecContext) {
		n := &corev1.Namespace{}
		Expect(env.Host.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		Expect(n.Labels).To(HaveKeyWithValue(wellknown.HeldLabel, wellknown.HeldTrue))
		patch := client.MergeFrom(n.DeepCopy())
		delete(n.Labels, wellknown.PropagationLabel)
		Expect(env.Host.Patch(ctx, n, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			rbs := &workv1alpha2.ResourceBindingList{}
			g.Expect(env.Host.List(ctx, rbs, client.InNamespace(ns))).To(Succeed())
			g.Expect(rbs.Items).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
		// Edits wake the host's controllers; they still make nothing.
		patchTemplate(ctx, app, `{"spec":{"replicas":6}}`)
		Consistently(func(g Gomega) {
			fleettest.ExpectHostControllersKeptOff(ctx, g, env.Host, ns, templates)
			rss := &appsv1.ReplicaSetList{}
			g.Expect(env.Host.List(ctx, rss, client.InNamespace(ns))).To(Succeed())
			g.Expect(rss.Items).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(env.Host.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		Expect(n.Labels).To(HaveKeyWithValue(wellknown.HeldLabel, wellknown.HeldTrue))
	})
})

// logHoldDenials prints how many requests the host hold has denied so far, in all and per
// template, from the host apiserver's metrics.
func logHoldDenials(ctx context.Context, templates int) {
	raw, err := hostMetrics(ctx)
	if err != nil {
		GinkgoWriter.Printf("host metrics: %v\n", err)
		return
	}
	denied := sumMetric(raw, "apiserver_validating_admission_policy_check_total", `enforcement_action="deny"`, `policy="flotilla-template-hold"`)
	GinkgoWriter.Printf("host hold: %.0f requests denied so far (%.1f per template of this spec's namespace, %d templates)\n",
		denied, denied/float64(templates), templates)
}

// hostMetrics reads the host apiserver's /metrics.
func hostMetrics(ctx context.Context) (string, error) {
	cs, err := kubernetes.NewForConfig(env.Fleet.Host.RESTConfig())
	if err != nil {
		return "", err
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	return string(raw), err
}

// sumMetric sums the samples of a metric whose labels contain every one of labels.
func sumMetric(text, name string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(line, l)
		}
		if !matches {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}
