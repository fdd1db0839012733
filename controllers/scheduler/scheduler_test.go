package scheduler_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	schedulercontroller "github.com/flotilla-io/flotilla/controllers/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

var nsCounter int

func newNamespace(ctx context.Context) string {
	nsCounter++
	name := fmt.Sprintf("sched-%d", nsCounter)
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	return name
}

func weighted(names ...string) *policyv1alpha1.Placement {
	var ws []policyv1alpha1.StaticClusterWeight
	for _, n := range names {
		ws = append(ws, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{n}}, Weight: 10})
	}
	return &policyv1alpha1.Placement{
		ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: names},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: ws}},
	}
}

func newBinding(ns, name string, replicas int32, p *policyv1alpha1.Placement) *workv1alpha2.ResourceBinding {
	return &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
			Replicas: replicas, Placement: p}}
}

func get(ctx context.Context, ns, name string) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{}
	ExpectWithOffset(1, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rb)).To(Succeed())
	return rb
}

func replicasOf(rb *workv1alpha2.ResourceBinding) map[string]int32 {
	out := map[string]int32{}
	for _, tc := range rb.Spec.Clusters {
		out[tc.Name] = tc.Replicas
	}
	return out
}

var _ = Describe("Scheduler reconciler", func() {
	It("schedules the seed case, keeps the first two clusters on scale-up, and records its decision", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(c.Create(ctx, newBinding(ns, "pipy", 2, weighted("m1", "m2", "m3")))).To(Succeed())
		var first map[string]int32
		Eventually(func(g Gomega) {
			rb := get(ctx, ns, "pipy")
			first = replicasOf(rb)
			g.Expect(first).To(HaveLen(2))
			g.Expect(first).To(HaveEach(BeEquivalentTo(1)))
			g.Expect(rb.Annotations).To(HaveKey(wellknown.AppliedPlacementAnnotation))
			g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue())
			g.Expect(rb.Status.SchedulerObservedGeneration).To(Equal(rb.Generation))
			g.Expect(rb.Status.LastScheduledTime).NotTo(BeNil())
		}).WithContext(ctx).Should(Succeed())

		rb := get(ctx, ns, "pipy")
		rb.Spec.Replicas = 3
		Expect(c.Update(ctx, rb)).To(Succeed())
		Eventually(func(g Gomega) {
			got := replicasOf(get(ctx, ns, "pipy"))
			g.Expect(got).To(Equal(map[string]int32{"m1": 1, "m2": 1, "m3": 1}))
		}).WithContext(ctx).Should(Succeed())
		for n := range first {
			Expect(replicasOf(get(ctx, ns, "pipy"))[n]).To(BeEquivalentTo(1))
		}
		Eventually(func(g Gomega) {
			evs := &eventsv1.EventList{}
			g.Expect(c.List(ctx, evs, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				reasons = append(reasons, e.Regarding.Kind+"/"+e.Reason)
			}
			g.Expect(reasons).To(ContainElements("ResourceBinding/"+wellknown.EventReasonScheduleBindingSucceed, "Deployment/"+wellknown.EventReasonScheduleBindingSucceed))
		}).WithContext(ctx).Should(Succeed())
	})

	It("writes a first placement with one spec and one status write", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(c.Create(ctx, newBinding(ns, "once", 3, weighted("m1", "m2", "m3")))).To(Succeed())
		Eventually(func(g Gomega) {
			rb := get(ctx, ns, "once")
			g.Expect(rb.Spec.Clusters).To(HaveLen(3))
			g.Expect(meta.IsStatusConditionTrue(rb.Status.Conditions, wellknown.ConditionScheduled)).To(BeTrue())
			g.Expect(rb.Status.SchedulerObservedGeneration).To(Equal(rb.Generation))
		}).WithContext(ctx).Should(Succeed())
		// The event of its own spec write brings the binding back, often before the cache
		// shows the status write that followed: that status is not written again.
		path := "/apis/work.karmada.io/v1alpha2/namespaces/" + ns + "/resourcebindings/once"
		Expect(managerRequests(http.MethodPatch, path)).To(Equal(1))
		Expect(managerRequests(http.MethodPatch, path+"/status")).To(Equal(1))
	})

	It("does not write the status again when its own spec write comes back before the status write shows", func(ctx context.Context) {
		ns := newNamespace(ctx)
		// Another scheduler name: the suite's scheduler leaves this binding to r.
		rb := newBinding(ns, "stale", 3, weighted("m1", "m2", "m3"))
		rb.Spec.SchedulerName = "direct"
		Expect(c.Create(ctx, rb)).To(Succeed())
		cfg := host.RESTConfig()
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} })
		real, err := client.New(cfg, client.Options{Scheme: flotillascheme.New()})
		Expect(err).NotTo(HaveOccurred())
		stale := &staleStatusClient{Client: real}
		s, err := scheduler.New(scheduler.Options{})
		Expect(err).NotTo(HaveOccurred())
		r := &schedulercontroller.Reconciler{Client: stale, Recorder: events.NewFakeRecorder(10), Scheduler: s, SchedulerName: "direct",
			NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "stale"}}
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		path := "/apis/work.karmada.io/v1alpha2/namespaces/" + ns + "/resourcebindings/stale/status"
		Expect(managerRequests(http.MethodPatch, path)).To(Equal(1))

		By("reading the binding as a cache would that shows the spec write but not the status write")
		stale.hideStatus = true
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(managerRequests(http.MethodPatch, path)).To(Equal(1))
	})

	It("takes a write that meets a newer binding for a retry, not an error", func(ctx context.Context) {
		ns := newNamespace(ctx)
		// Another scheduler name: the suite's scheduler leaves this binding to r. No cluster
		// matches, so r writes the failure's status with the binding's resourceVersion.
		p := &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "none"}}}}
		rb := newBinding(ns, "raced", 1, p)
		rb.Spec.SchedulerName = "direct"
		Expect(c.Create(ctx, rb)).To(Succeed())
		old := get(ctx, ns, "raced")
		By("changing the binding after the copy the reconciler will read")
		rb = old.DeepCopy()
		rb.Labels = map[string]string{"changed": "after-the-read"}
		Expect(c.Update(ctx, rb)).To(Succeed())
		s, err := scheduler.New(scheduler.Options{})
		Expect(err).NotTo(HaveOccurred())
		r := &schedulercontroller.Reconciler{Client: &fleettest.PinnedClient{Client: c, Pinned: old}, Recorder: events.NewFakeRecorder(10),
			Scheduler: s, SchedulerName: "direct", NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "raced"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically(">", 0))
		Expect(meta.FindStatusCondition(get(ctx, ns, "raced").Status.Conditions, wellknown.ConditionScheduled)).To(BeNil(),
			"the write from the old copy must have been refused")

		By("reading the binding as it is now")
		r.Client = c
		_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "raced"}})
		Expect(err).NotTo(HaveOccurred())
		cond := meta.FindStatusCondition(get(ctx, ns, "raced").Status.Conditions, wellknown.ConditionScheduled)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Reason).To(Equal(wellknown.ReasonBindingUnschedulable))
	})

	It("places a binding again when its cluster is deleted and joins again under the same name", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(createCluster(ctx, c, "phoenix", nil)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(c.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "phoenix"}}))).To(Succeed())
		})
		Expect(c.Create(ctx, newBinding(ns, "reborn", 1, weighted("phoenix")))).To(Succeed())
		scheduled := func(want metav1.ConditionStatus) func(g Gomega) {
			return func(g Gomega) {
				cond := meta.FindStatusCondition(get(ctx, ns, "reborn").Status.Conditions, wellknown.ConditionScheduled)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Status).To(Equal(want))
			}
		}
		Eventually(scheduled(metav1.ConditionTrue)).WithContext(ctx).Should(Succeed())
		generation := get(ctx, ns, "reborn").Generation

		By("the cluster going: the binding keeps its placement, Unschedulable")
		Expect(c.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "phoenix"}})).To(Succeed())
		Eventually(scheduled(metav1.ConditionFalse)).WithContext(ctx).Should(Succeed())

		By("the cluster joining again: the same placement, at the same generation, is valid again")
		Expect(createCluster(ctx, c, "phoenix", nil)).To(Succeed())
		// Before, the scheduler took the True condition for written already (it had written it
		// for this generation before the failure) and the binding stayed Unschedulable.
		Eventually(scheduled(metav1.ConditionTrue)).WithContext(ctx).Should(Succeed())
		rb := get(ctx, ns, "reborn")
		Expect(rb.Generation).To(Equal(generation))
		Expect(replicasOf(rb)).To(Equal(map[string]int32{"phoenix": 1}))
	})

	It("writes Scheduled back when its cache still shows it as it was before a failure", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(createCluster(ctx, c, "lazarus", nil)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(c.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "lazarus"}}))).To(Succeed())
		})
		// Another scheduler name: the suite's scheduler leaves this binding to r, whose reads
		// of the binding are pinned once it is placed, as a cache that does not show r's
		// status writes would read it.
		rb := newBinding(ns, "lazarus", 1, weighted("lazarus"))
		rb.Spec.SchedulerName = "direct"
		Expect(c.Create(ctx, rb)).To(Succeed())
		s, err := scheduler.New(scheduler.Options{})
		Expect(err).NotTo(HaveOccurred())
		pinned := &fleettest.PinnedClient{Client: c}
		r := &schedulercontroller.Reconciler{Client: pinned, Recorder: events.NewFakeRecorder(10), Scheduler: s, SchedulerName: "direct",
			NewBinding: func() client.Object { return &workv1alpha2.ResourceBinding{} }}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "lazarus"}}
		scheduled := func() metav1.ConditionStatus {
			cond := meta.FindStatusCondition(get(ctx, ns, "lazarus").Status.Conditions, wellknown.ConditionScheduled)
			Expect(cond).NotTo(BeNil())
			return cond.Status
		}
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(scheduled()).To(Equal(metav1.ConditionTrue))
		pinned.Pinned = get(ctx, ns, "lazarus")

		By("the cluster going and joining again, with r reading the binding as it was placed")
		Expect(c.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "lazarus"}})).To(Succeed())
		Eventually(fleettest.Gone(ctx, c, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "lazarus"}})).WithContext(ctx).Should(BeTrue())
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(scheduled()).To(Equal(metav1.ConditionFalse))
		Expect(createCluster(ctx, c, "lazarus", nil)).To(Succeed())
		res, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		// Before, the stale copy showed Scheduled=True already: nothing was written and nothing
		// would bring the binding back (a status write is not an event the scheduler follows).
		// Now the write is tried, refused for the stale resourceVersion, and retried.
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "the binding is looked at again")

		By("the cache catching up")
		pinned.Pinned = get(ctx, ns, "lazarus")
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(scheduled()).To(Equal(metav1.ConditionTrue))
	})

	It("places a binding whose last attempt failed as soon as the cluster it wants is untainted", func(ctx context.Context) {
		for _, n := range []string{"was-here", "wanted"} {
			Expect(createCluster(ctx, c, n, nil)).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				Expect(client.IgnoreNotFound(c.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
			})
		}
		setTaints := func(taints ...corev1.Taint) {
			cl := &clusterv1alpha1.Cluster{}
			Expect(c.Get(ctx, types.NamespacedName{Name: "wanted"}, cl)).To(Succeed())
			cl.Spec.Taints = taints
			Expect(c.Update(ctx, cl)).To(Succeed())
		}
		setTaints(corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule})
		ns := newNamespace(ctx)
		Expect(c.Create(ctx, newBinding(ns, "mover", 2, weighted("was-here")))).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "mover")) }).WithContext(ctx).
			Should(Equal(map[string]int32{"was-here": 2}))

		By("its policy moving it to the tainted cluster: it stays where it is, Unschedulable")
		rb := get(ctx, ns, "mover")
		patch := client.MergeFrom(rb.DeepCopy())
		rb.Spec.Placement = weighted("wanted")
		Expect(c.Patch(ctx, rb, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(get(ctx, ns, "mover").Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(wellknown.ReasonBindingUnschedulable))
		}).WithContext(ctx).Should(Succeed())
		Expect(replicasOf(get(ctx, ns, "mover"))).To(Equal(map[string]int32{"was-here": 2}))

		By("the taint removed")
		setTaints()
		// Its retry after a first failure is 5 s away: the Cluster's change brings it back
		// sooner. Before, a binding that kept clusters elsewhere waited for its backoff (up to
		// 5 minutes after several failures), since only bindings on the changed cluster,
		// unplaced ones and duplicated ones were looked at again.
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "mover")) }).WithContext(ctx).WithTimeout(3 * time.Second).
			Should(Equal(map[string]int32{"wanted": 2}))
	})

	It("does not reschedule on unrelated updates", func(ctx context.Context) {
		ns := newNamespace(ctx)
		Expect(c.Create(ctx, newBinding(ns, "steady", 4, weighted("m1", "m2")))).To(Succeed())
		var scheduledAt *metav1.Time
		Eventually(func(g Gomega) {
			rb := get(ctx, ns, "steady")
			g.Expect(rb.Spec.Clusters).NotTo(BeEmpty())
			g.Expect(rb.Status.LastScheduledTime).NotTo(BeNil())
			scheduledAt = rb.Status.LastScheduledTime
		}).WithContext(ctx).Should(Succeed())
		rb := get(ctx, ns, "steady")
		rb.Labels = map[string]string{"unrelated": "change"}
		rb.Spec.ConflictResolution = policyv1alpha1.ConflictOverwrite
		Expect(c.Update(ctx, rb)).To(Succeed())
		Consistently(func() *metav1.Time { return get(ctx, ns, "steady").Status.LastScheduledTime }).
			WithContext(ctx).WithTimeout(2e9).Should(Equal(scheduledAt))
	})

	It("reports why a binding is unschedulable, then schedules it when a cluster fits", func(ctx context.Context) {
		ns := newNamespace(ctx)
		p := &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "platinum"}}}}
		Expect(c.Create(ctx, newBinding(ns, "picky", 1, p))).To(Succeed())
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(get(ctx, ns, "picky").Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(wellknown.ReasonBindingUnschedulable))
			g.Expect(cond.Message).To(MatchRegexp(`0/\d+ clusters are available: \d+ did not match the cluster affinity`))
		}).WithContext(ctx).Should(Succeed())

		Expect(createCluster(ctx, c, "platinum-1", map[string]string{"tier": "platinum"})).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "picky")) }).WithContext(ctx).
			Should(Equal(map[string]int32{"platinum-1": 1}))
	})

	It("leaves bindings of another scheduler alone, and pauses on suspension.scheduling", func(ctx context.Context) {
		ns := newNamespace(ctx)
		other := newBinding(ns, "other", 1, weighted("m1"))
		other.Spec.SchedulerName = "my-scheduler"
		Expect(c.Create(ctx, other)).To(Succeed())
		paused := newBinding(ns, "paused", 1, weighted("m1"))
		paused.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
		Expect(c.Create(ctx, paused)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(get(ctx, ns, "other").Spec.Clusters).To(BeEmpty())
			g.Expect(get(ctx, ns, "paused").Spec.Clusters).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(2e9).Should(Succeed())

		rb := get(ctx, ns, "paused")
		rb.Spec.Suspension = nil
		Expect(c.Update(ctx, rb)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "paused")) }).WithContext(ctx).
			Should(Equal(map[string]int32{"m1": 1}))
	})

	It("keeps a binding on a cluster tainted NoExecute: leaving it is the failover controller's job", func(ctx context.Context) {
		Expect(createCluster(ctx, c, "tainted", nil)).To(Succeed())
		ns := newNamespace(ctx)
		p := &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"tainted", "m1"}}}
		Expect(c.Create(ctx, newBinding(ns, "evictable", 0, p))).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "evictable")) }).WithContext(ctx).
			Should(HaveKey("tainted"))
		cl := &clusterv1alpha1.Cluster{}
		Expect(c.Get(ctx, types.NamespacedName{Name: "tainted"}, cl)).To(Succeed())
		cl.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}
		Expect(c.Update(ctx, cl)).To(Succeed())
		Consistently(func() map[string]int32 { return replicasOf(get(ctx, ns, "evictable")) }).WithContext(ctx).
			WithTimeout(2 * time.Second).Should(HaveKey("tainted"))

		// Once evicted (what the failover controller writes), the taint keeps it off.
		rb := get(ctx, ns, "evictable")
		rb.Spec.Clusters = slices.DeleteFunc(rb.Spec.Clusters, func(tc workv1alpha2.TargetCluster) bool { return tc.Name == "tainted" })
		Expect(c.Update(ctx, rb)).To(Succeed())
		Consistently(func() map[string]int32 { return replicasOf(get(ctx, ns, "evictable")) }).WithContext(ctx).
			WithTimeout(2 * time.Second).Should(Equal(map[string]int32{"m1": 0}))
	})

	It("retries an unschedulable binding when a cluster's capacity grows, with no other change", func(ctx context.Context) {
		Expect(createCluster(ctx, c, "cap-1", map[string]string{"pool": "capacity"})).To(Succeed())
		ns := newNamespace(ctx)
		p := &policyv1alpha1.Placement{
			ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "capacity"}}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}},
		}
		rb := newBinding(ns, "big", 4, p)
		rb.Spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		Expect(c.Create(ctx, rb)).To(Succeed())
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(get(ctx, ns, "big").Status.Conditions, wellknown.ConditionScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(wellknown.ReasonBindingUnschedulable))
		}).WithContext(ctx).Should(Succeed())

		// Only the status changes, as the cluster controller's collection would write it
		// after a Node joined: the binding must be tried again at once, not after a backoff.
		cl := &clusterv1alpha1.Cluster{}
		Expect(c.Get(ctx, types.NamespacedName{Name: "cap-1"}, cl)).To(Succeed())
		cl.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
		Expect(c.Status().Update(ctx, cl)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, ns, "big")) }).WithContext(ctx).WithTimeout(10 * time.Second).
			Should(Equal(map[string]int32{"cap-1": 4}))
	})
})

// staleStatusClient reads bindings without their status once hideStatus is set, as a cache
// that has not seen the last status write yet.
type staleStatusClient struct {
	client.Client
	hideStatus bool
}

func (s *staleStatusClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := s.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if rb, ok := obj.(*workv1alpha2.ResourceBinding); ok && s.hideStatus {
		rb.Status = workv1alpha2.ResourceBindingStatus{}
	}
	return nil
}
