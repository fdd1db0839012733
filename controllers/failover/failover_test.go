package failover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/failover"
	"github.com/flotilla-io/flotilla/internal/bindings"
	internalfailover "github.com/flotilla-io/flotilla/internal/failover"
)

var nsCount int

func newNamespace(ctx context.Context) string {
	nsCount++
	ns := fmt.Sprintf("failover-%d", nsCount)
	Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	return ns
}

// divided is a binding of a Deployment with replicas divided 1:1 over clusters.
func divided(ns, name string, replicas int32, clusters ...string) *workv1alpha2.ResourceBinding {
	var weights []policyv1alpha1.StaticClusterWeight
	for _, cl := range clusters {
		weights = append(weights, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{cl}}, Weight: 1})
	}
	return &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
			Replicas: replicas,
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: weights}},
			}}}
}

func get(ctx context.Context, rb *workv1alpha2.ResourceBinding) *workv1alpha2.ResourceBinding {
	cur := &workv1alpha2.ResourceBinding{}
	ExpectWithOffset(1, c.Get(ctx, client.ObjectKeyFromObject(rb), cur)).To(Succeed())
	return cur
}

func replicasOf(rb *workv1alpha2.ResourceBinding) map[string]int32 {
	out := map[string]int32{}
	for _, tc := range rb.Spec.Clusters {
		out[tc.Name] = tc.Replicas
	}
	return out
}

func tasksOf(rb *workv1alpha2.ResourceBinding) []string {
	var out []string
	for _, t := range rb.Spec.GracefulEvictionTasks {
		out = append(out, t.FromCluster)
	}
	return out
}

func setTaints(ctx context.Context, cluster string, taints ...corev1.Taint) {
	Eventually(func() error {
		cl := &clusterv1alpha1.Cluster{}
		if err := c.Get(ctx, types.NamespacedName{Name: cluster}, cl); err != nil {
			return err
		}
		cl.Spec.Taints = taints
		return c.Update(ctx, cl)
	}).WithContext(ctx).Should(Succeed())
}

func noExecute(key string) corev1.Taint {
	return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.Now())}
}

func tolerate(key string, seconds int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(seconds)}
}

// writeWork plays the binding and execution controllers: the binding's Work for cluster,
// rendering replicas, applied, with the health and status the member would report.
func writeWork(ctx context.Context, rb *workv1alpha2.ResourceBinding, cluster string, replicas int32, health workv1alpha1.ResourceHealth, status map[string]any) {
	ns := wellknown.ExecutionNamespace(cluster)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	manifest, err := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": rb.Namespace, "name": rb.Name}, "spec": map[string]any{"replicas": replicas}})
	Expect(err).NotTo(HaveOccurred())
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bindings.WorkName("Deployment", rb.Namespace, rb.Name)}}
	Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); apierrors.IsNotFound(err) {
			w.Labels = map[string]string{bindings.WorkBindingLabel(rb): bindings.PermanentID(rb)}
			w.Annotations = map[string]string{wellknown.ResourceBindingNamespaceAnnotation: rb.Namespace, wellknown.ResourceBindingNameAnnotation: rb.Name}
			w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}}
			return c.Create(ctx, w)
		} else if err != nil {
			return err
		}
		w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}}
		return c.Update(ctx, w)
	}).WithContext(ctx).Should(Succeed())
	raw, err := json.Marshal(status)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: wellknown.WorkConditionApplied, Status: metav1.ConditionTrue,
			Reason: "AppliedSuccessful", Message: "applied", ObservedGeneration: w.Generation})
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
			Identifier: workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: rb.Namespace, Name: rb.Name},
			Status:     &runtime.RawExtension{Raw: raw}, Health: health}}
		return c.Status().Update(ctx, w)
	}).WithContext(ctx).Should(Succeed())
}

func eventNotes(ctx context.Context, g Gomega, ns, kind, name, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

var _ = Describe("Failover", func() {
	AfterEach(func(ctx context.Context) {
		for _, m := range []string{"m1", "m2", "m3"} {
			setTaints(ctx, m)
		}
	})

	It("leaves a cluster whose NoExecute taint is tolerated for a time that runs out, gracefully, and purges once healthy elsewhere", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rb := divided(ns, "web", 4, "m1", "m2")
		rb.Spec.Placement.ClusterTolerations = []corev1.Toleration{tolerate("maintenance", 3)}
		Expect(c.Create(ctx, rb)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).Should(Equal(map[string]int32{"m1": 2, "m2": 2}))
		rb = get(ctx, rb)
		writeWork(ctx, rb, "m1", 2, workv1alpha1.ResourceHealthy, map[string]any{"readyReplicas": 2})
		writeWork(ctx, rb, "m2", 2, workv1alpha1.ResourceHealthy, map[string]any{"readyReplicas": 2})

		tainted := time.Now()
		setTaints(ctx, "m2", noExecute("maintenance"))
		// Tolerated for 3 s (from the taint's TimeAdded, which has whole seconds): nothing
		// moves before.
		Consistently(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).
			WithTimeout(1500 * time.Millisecond).Should(Equal(map[string]int32{"m1": 2, "m2": 2}))
		Eventually(func(g Gomega) {
			cur := get(ctx, rb)
			g.Expect(replicasOf(cur)).To(Equal(map[string]int32{"m1": 4}))
			g.Expect(cur.Spec.GracefulEvictionTasks).To(HaveLen(1))
			t := cur.Spec.GracefulEvictionTasks[0]
			g.Expect(t.FromCluster).To(Equal("m2"))
			g.Expect(t.Producer).To(Equal(internalfailover.ProducerTaintManager))
			g.Expect(t.PurgeMode).To(Equal(policyv1alpha1.PurgeModeGracefully))
			g.Expect(*t.Replicas).To(Equal(int32(2)))
			g.Expect(t.ClustersBeforeFailover).To(ConsistOf("m1", "m2"))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("evicted %s after the taint (toleration 3 s)\n", time.Since(tainted).Round(10*time.Millisecond))
		Eventually(func(g Gomega) []string {
			return eventNotes(ctx, g, ns, "ResourceBinding", "web", failover.EventReasonEvictWorkloadFromClusterSucceed)
		}).WithContext(ctx).Should(ContainElement(ContainSubstring("Evicted from cluster m2 (TaintManager): taint maintenance:NoExecute was tolerated until")))

		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(get(ctx, rb).Status.Conditions, failover.ConditionEvicting)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(HavePrefix("Leaving m2 (Gracefully): "))
		}).WithContext(ctx).Should(Succeed())
		// The task stays while m1 does not run the new share yet...
		Consistently(func() []string { return tasksOf(get(ctx, rb)) }).WithContext(ctx).WithTimeout(time.Second).Should(Equal([]string{"m2"}))
		// ...nor while it runs it but not all of it is ready...
		writeWork(ctx, rb, "m1", 4, workv1alpha1.ResourceHealthy, map[string]any{"readyReplicas": 3})
		Consistently(func() []string { return tasksOf(get(ctx, rb)) }).WithContext(ctx).WithTimeout(time.Second).Should(Equal([]string{"m2"}))
		// ...and is done once it does.
		writeWork(ctx, rb, "m1", 4, workv1alpha1.ResourceHealthy, map[string]any{"readyReplicas": 4})
		Eventually(func() []string { return tasksOf(get(ctx, rb)) }).WithContext(ctx).Should(BeEmpty())
		Eventually(func() *metav1.Condition {
			return meta.FindStatusCondition(get(ctx, rb).Status.Conditions, failover.ConditionEvicting)
		}).WithContext(ctx).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", failover.ReasonNoEviction)))
		Eventually(func(g Gomega) []string {
			return eventNotes(ctx, g, ns, "ResourceBinding", "web", failover.EventReasonGracefulEvictionDone)
		}).WithContext(ctx).Should(ContainElement(ContainSubstring("Eviction from cluster m2 is done, its Work there is removed: the workload is healthy on m1")))
		// The template is told too.
		Eventually(func(g Gomega) []string {
			return eventNotes(ctx, g, ns, "Deployment", "web", failover.EventReasonEvictWorkloadFromClusterSucceed)
		}).WithContext(ctx).ShouldNot(BeEmpty())
	})

	It("does not move for a taint that goes within its toleration (a flap)", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rb := divided(ns, "flap", 4, "m1", "m2")
		rb.Spec.Placement.ClusterTolerations = []corev1.Toleration{tolerate("flaky", 3)}
		Expect(c.Create(ctx, rb)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).Should(Equal(map[string]int32{"m1": 2, "m2": 2}))
		setTaints(ctx, "m2", noExecute("flaky"))
		time.Sleep(time.Second)
		setTaints(ctx, "m2")
		Consistently(func(g Gomega) {
			cur := get(ctx, rb)
			g.Expect(replicasOf(cur)).To(Equal(map[string]int32{"m1": 2, "m2": 2}))
			g.Expect(cur.Spec.GracefulEvictionTasks).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(4 * time.Second).Should(Succeed())
	})

	It("keeps the old cluster when nothing else fits, and says so when the grace period ends", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rb := divided(ns, "alone", 2, "m3")
		Expect(c.Create(ctx, rb)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).Should(Equal(map[string]int32{"m3": 2}))
		// Not tolerated at all: it leaves at once, and has nowhere to go.
		setTaints(ctx, "m3", noExecute("broken"))
		Eventually(func(g Gomega) {
			cur := get(ctx, rb)
			g.Expect(cur.Spec.Clusters).To(BeEmpty())
			g.Expect(tasksOf(cur)).To(Equal([]string{"m3"}))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) []string {
			return eventNotes(ctx, g, ns, "ResourceBinding", "alone", failover.EventReasonGracefulEvictionBlocked)
		}).WithContext(ctx).Should(ContainElement("the grace period ended, but no other cluster fits the workload: keeping it on m3"))
		Consistently(func() []string { return tasksOf(get(ctx, rb)) }).WithContext(ctx).WithTimeout(time.Second).Should(Equal([]string{"m3"}))
		Eventually(func() *metav1.Condition {
			return meta.FindStatusCondition(get(ctx, rb).Status.Conditions, failover.ConditionEvicting)
		}).WithContext(ctx).Should(And(Not(BeNil()), HaveField("Reason", failover.ReasonEvictionBlocked)))

		// The cluster recovers: the binding is scheduled there again, and the task is done.
		setTaints(ctx, "m3")
		Eventually(func(g Gomega) {
			cur := get(ctx, rb)
			g.Expect(replicasOf(cur)).To(Equal(map[string]int32{"m3": 2}))
			g.Expect(cur.Spec.GracefulEvictionTasks).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})

	It("gives the system NoExecute taints Karmada's default toleration, not an immediate eviction", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rb := divided(ns, "defaults", 2, "m1", "m2")
		Expect(c.Create(ctx, rb)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).Should(Equal(map[string]int32{"m1": 1, "m2": 1}))
		setTaints(ctx, "m2", noExecute(wellknown.TaintClusterNotReady))
		Consistently(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).
			WithTimeout(2 * time.Second).Should(Equal(map[string]int32{"m1": 1, "m2": 1}))
		Eventually(func(g Gomega) []string {
			return eventNotes(ctx, g, ns, "ResourceBinding", "defaults", failover.EventReasonTaintToleration)
		}).WithContext(ctx).Should(ContainElement(ContainSubstring("Cluster m2 is tainted cluster.karmada.io/not-ready:NoExecute; the workload leaves it at")))
	})

	It("moves an application unhealthy for longer than failover.application tolerates, with its preserved state", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rb := divided(ns, "app", 2, "m1", "m2", "m3")
		rb.Spec.Placement.ClusterAffinity.ClusterNames = []string{"m1", "m2", "m3"}
		rb.Spec.Placement.ReplicaScheduling.WeightPreference.StaticWeightList = rb.Spec.Placement.ReplicaScheduling.WeightPreference.StaticWeightList[:2]
		rb.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](3)},
			PurgeMode:          policyv1alpha1.PurgeModeDirectly,
			StatePreservation:  &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "example.io/job-id", JSONPath: "{.jobID}"}}},
		}}
		Expect(c.Create(ctx, rb)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).Should(Equal(map[string]int32{"m1": 1, "m2": 1}))
		rb = get(ctx, rb)
		writeWork(ctx, rb, "m1", 1, workv1alpha1.ResourceHealthy, map[string]any{"readyReplicas": 1})
		unhealthy := time.Now()
		writeWork(ctx, rb, "m2", 1, workv1alpha1.ResourceUnhealthy, map[string]any{"readyReplicas": 0, "jobID": "j-42"})
		Consistently(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).
			WithTimeout(1500 * time.Millisecond).Should(Equal(map[string]int32{"m1": 1, "m2": 1}))
		Eventually(func(g Gomega) {
			cur := get(ctx, rb)
			g.Expect(cur.Spec.Clusters).NotTo(ContainElement(HaveField("Name", "m2")))
			g.Expect(cur.Spec.GracefulEvictionTasks).To(HaveLen(1))
			t := cur.Spec.GracefulEvictionTasks[0]
			g.Expect(t.FromCluster).To(Equal("m2"))
			g.Expect(t.Producer).To(Equal(internalfailover.ProducerApplicationFailover))
			g.Expect(t.PurgeMode).To(Equal(policyv1alpha1.PurgeModeDirectly))
			g.Expect(t.PreservedLabelState).To(Equal(map[string]string{"example.io/job-id": "j-42"}))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("application moved %s after it became unhealthy (toleration 3 s)\n", time.Since(unhealthy).Round(10*time.Millisecond))
		Eventually(func(g Gomega) []string {
			return eventNotes(ctx, g, ns, "ResourceBinding", "app", failover.EventReasonApplicationUnhealthy)
		}).WithContext(ctx).Should(ContainElement(ContainSubstring("The workload is unhealthy on cluster m2")))
	})

	It("waits, and says why, when statePreservation cannot read the state", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rb := divided(ns, "nostate", 1, "m1")
		rb.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](0)},
			StatePreservation:  &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "k", JSONPath: "{.missing}"}}},
		}}
		Expect(c.Create(ctx, rb)).To(Succeed())
		Eventually(func() map[string]int32 { return replicasOf(get(ctx, rb)) }).WithContext(ctx).Should(Equal(map[string]int32{"m1": 1}))
		writeWork(ctx, get(ctx, rb), "m1", 1, workv1alpha1.ResourceUnhealthy, map[string]any{"readyReplicas": 0})
		Eventually(func(g Gomega) []string {
			return eventNotes(ctx, g, ns, "ResourceBinding", "nostate", failover.EventReasonEvictWorkloadFromClusterFailed)
		}).WithContext(ctx).Should(ContainElement(ContainSubstring(`Not leaving cluster m1: statePreservation rule 0 (k): jsonPath "{.missing}"`)))
		Expect(replicasOf(get(ctx, rb))).To(Equal(map[string]int32{"m1": 1}))
	})
})
