package federatedresourcequota_test

import (
	"context"
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/frq"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func createNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	err := env.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

func work(ctx context.Context, ns, name, cluster string) (*workv1alpha1.Work, error) {
	w := &workv1alpha1.Work{}
	err := env.Host.Get(ctx, client.ObjectKey{Namespace: wellknown.ExecutionNamespace(cluster), Name: frq.WorkName(ns, name)}, w)
	return w, err
}

// memberQuota is the ResourceQuota a Work carries.
func memberQuota(w *workv1alpha1.Work) *corev1.ResourceQuota {
	GinkgoHelper()
	Expect(w.Spec.Workload.Manifests).To(HaveLen(1))
	rq := &corev1.ResourceQuota{}
	Expect(json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, rq)).To(Succeed())
	return rq
}

// applied writes the Work's status as the execution and work-status controllers would: the
// member ResourceQuota is applied and reports hard and used.
func applied(ctx context.Context, ns, name, cluster string, hard, used corev1.ResourceList) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w, err := work(ctx, ns, name, cluster)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(corev1.ResourceQuotaStatus{Hard: hard, Used: used})
		if err != nil {
			return err
		}
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: wellknown.WorkConditionApplied, Status: metav1.ConditionTrue,
			Reason: "AppliedSuccessful", Message: "applied", ObservedGeneration: w.Generation})
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
			Identifier: workv1alpha1.ResourceIdentifier{Version: "v1", Kind: "ResourceQuota", Resource: "resourcequotas", Namespace: ns, Name: name},
			Status:     &runtime.RawExtension{Raw: raw},
		}}
		return env.Host.Status().Update(ctx, w)
	})).To(Succeed())
}

// releaseWhenDeleted removes the execution finalizer of a deleted Work, as the execution
// controller does once the member object is gone.
func releaseWhenDeleted(ctx context.Context, ns, name, cluster string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		w, err := work(ctx, ns, name, cluster)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(w.DeletionTimestamp).NotTo(BeNil(), "the Work of %s is not being deleted", cluster)
		controllerutil.RemoveFinalizer(w, wellknown.ExecutionControllerFinalizer)
		g.Expect(client.IgnoreNotFound(env.Host.Update(ctx, w))).To(Succeed())
		_, err = work(ctx, ns, name, cluster)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}).Should(Succeed())
}

func ready(ctx context.Context, key client.ObjectKey) func(g Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		q := &policyv1alpha1.FederatedResourceQuota{}
		g.Expect(env.Host.Get(ctx, key, q)).To(Succeed())
		c := meta.FindStatusCondition(q.Status.Conditions, policyv1alpha1.FederatedResourceQuotaConditionReady)
		g.Expect(c).NotTo(BeNil())
		return c
	}
}

func eventReasons(ctx context.Context, ns, name string) []string {
	GinkgoHelper()
	evs := &eventsv1.EventList{}
	Expect(env.Host.List(ctx, evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Kind == "FederatedResourceQuota" && e.Regarding.Name == name {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

var _ = Describe("FederatedResourceQuota", func() {
	It("keeps a ResourceQuota Work per static assignment, aggregates the members' usage, prunes and finalizes", func(ctx SpecContext) {
		const ns, name = "team-a", "quota"
		createNamespace(ctx, ns)
		createNamespace(ctx, wellknown.ExecutionNamespace("m1"))
		createNamespace(ctx, wellknown.ExecutionNamespace("m2"))
		key := client.ObjectKey{Namespace: ns, Name: name}
		q := &policyv1alpha1.FederatedResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.FederatedResourceQuotaSpec{
				Overall: list("cpu", "10", "memory", "10Gi"),
				StaticAssignments: []policyv1alpha1.StaticClusterAssignment{
					{ClusterName: "m1", Hard: list("cpu", "2")},
					{ClusterName: "m2", Hard: list("cpu", "3", "memory", "1Gi")},
					{ClusterName: "m3", Hard: list("cpu", "1")}, // not joined: no execution namespace
				},
			},
		}
		Expect(env.Host.Create(ctx, q)).To(Succeed())

		By("writing a Work per joined member, with the assignment's hard limits")
		Eventually(func(g Gomega) {
			for cluster, cpu := range map[string]string{"m1": "2", "m2": "3"} {
				w, err := work(ctx, ns, name, cluster)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(w.Finalizers).To(ContainElement(wellknown.ExecutionControllerFinalizer))
				g.Expect(w.Labels).To(HaveKeyWithValue(frq.NameLabel, name))
				rq := memberQuota(w)
				g.Expect(rq.Namespace).To(Equal(ns))
				g.Expect(rq.Name).To(Equal(name))
				g.Expect(rq.Spec.Hard.Cpu().Cmp(resource.MustParse(cpu))).To(BeZero())
			}
		}).Should(Succeed())
		got := &policyv1alpha1.FederatedResourceQuota{}
		Expect(env.Host.Get(ctx, key, got)).To(Succeed())
		Expect(got.Finalizers).To(ContainElement(frq.Finalizer))

		By("saying which member could not get its quota, and why")
		Eventually(func(g Gomega) {
			c := ready(ctx, key)(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(policyv1alpha1.ReasonQuotaApplyFailed))
			g.Expect(c.Message).To(ContainSubstring("m3: cluster is not joined (no execution namespace karmada-es-m3)"))
			g.Expect(c.Message).To(ContainSubstring("m1: not applied yet"))
		}).Should(Succeed())
		Eventually(func() []string { return eventReasons(ctx, ns, name) }).Should(ContainElement(
			ContainSubstring(policyv1alpha1.EventReasonQuotaSyncFailed + ": Failed: m3: cluster is not joined")))

		By("aggregating the members' ResourceQuota status once they report it")
		applied(ctx, ns, name, "m1", list("cpu", "2"), list("cpu", "1500m"))
		applied(ctx, ns, name, "m2", list("cpu", "3", "memory", "1Gi"), list("cpu", "1", "memory", "512Mi"))
		// m3 leaves the assignments: every remaining member reports.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Host.Get(ctx, key, got); err != nil {
				return err
			}
			got.Spec.StaticAssignments = got.Spec.StaticAssignments[:2]
			return env.Host.Update(ctx, got)
		})).To(Succeed())
		Eventually(func(g Gomega) {
			c := ready(ctx, key)(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
			g.Expect(c.Reason).To(Equal(policyv1alpha1.ReasonQuotaApplied))
			g.Expect(env.Host.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Status.AggregatedStatus).To(HaveLen(2))
			g.Expect(got.Status.AggregatedStatus[0].ClusterName).To(Equal("m1"))
			g.Expect(got.Status.AggregatedStatus[1].Used.Memory().String()).To(Equal("512Mi"))
			g.Expect(got.Status.OverallUsed.Cpu().String()).To(Equal("2500m"))
			g.Expect(got.Status.OverallUsed.Memory().String()).To(Equal("512Mi"))
			g.Expect(got.Status.Overall.Cpu().String()).To(Equal("10"))
		}).Should(Succeed())
		Eventually(func() []string { return eventReasons(ctx, ns, name) }).Should(ContainElement(
			policyv1alpha1.EventReasonQuotaStatusCollected + ": ResourceQuota applied and reported by 2 member(s)"))
		// Nothing changed in the Works since they were written: no update was recorded.
		Expect(eventReasons(ctx, ns, name)).NotTo(ContainElement(ContainSubstring("Updated the ResourceQuota")))

		By("updating a member's Work when its assignment changes")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Host.Get(ctx, key, got); err != nil {
				return err
			}
			got.Spec.StaticAssignments[0].Hard = list("cpu", "4")
			return env.Host.Update(ctx, got)
		})).To(Succeed())
		Eventually(func(g Gomega) {
			w, err := work(ctx, ns, name, "m1")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(memberQuota(w).Spec.Hard.Cpu().String()).To(Equal("4"))
		}).Should(Succeed())
		// Until m1 reports the new generation, its status is stale and left out.
		Eventually(func(g Gomega) {
			c := ready(ctx, key)(g)
			g.Expect(c.Reason).To(Equal(policyv1alpha1.ReasonQuotaPending))
			g.Expect(c.Message).To(Equal("Pending: m1: not applied yet"))
		}).Should(Succeed())
		applied(ctx, ns, name, "m1", list("cpu", "4"), list("cpu", "1500m"))
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Status.AggregatedStatus).To(HaveLen(2))
			g.Expect(got.Status.AggregatedStatus[0].Hard.Cpu().String()).To(Equal("4"))
		}).Should(Succeed())

		By("removing the Work of an assignment that goes")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Host.Get(ctx, key, got); err != nil {
				return err
			}
			got.Spec.StaticAssignments = got.Spec.StaticAssignments[:1]
			return env.Host.Update(ctx, got)
		})).To(Succeed())
		releaseWhenDeleted(ctx, ns, name, "m2")
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Status.AggregatedStatus).To(HaveLen(1))
			g.Expect(got.Status.OverallUsed.Memory().IsZero()).To(BeTrue())
		}).Should(Succeed())
		Expect(eventReasons(ctx, ns, name)).To(ContainElement(
			policyv1alpha1.EventReasonQuotaSynced + ": Removed the ResourceQuota of cluster m2, no longer assigned"))

		By("removing every Work before the quota goes")
		Expect(env.Host.Delete(ctx, got)).To(Succeed())
		releaseWhenDeleted(ctx, ns, name, "m1")
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Host.Get(ctx, key, &policyv1alpha1.FederatedResourceQuota{}))
		}).Should(BeTrue())
	})

	It("is Ready with no static assignments: overall alone is the scheduler's", func(ctx SpecContext) {
		const ns = "team-b"
		createNamespace(ctx, ns)
		q := &policyv1alpha1.FederatedResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "overall-only"},
			Spec:       policyv1alpha1.FederatedResourceQuotaSpec{Overall: list("cpu", "1")},
		}
		Expect(env.Host.Create(ctx, q)).To(Succeed())
		Eventually(func(g Gomega) {
			c := ready(ctx, client.ObjectKeyFromObject(q))(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring("No static assignments"))
		}).Should(Succeed())
		works := &workv1alpha1.WorkList{}
		Expect(env.Host.List(ctx, works, client.MatchingLabels(frq.WorkLabels(ns, q.Name)))).To(Succeed())
		Expect(works.Items).To(BeEmpty(), fmt.Sprint(works.Items))
	})
})
