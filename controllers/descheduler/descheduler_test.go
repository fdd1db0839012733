package descheduler_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/descheduler"
)

type policyReplicaScheduling = policyv1alpha1.ReplicaSchedulingStrategy

func dynamic() *policyReplicaScheduling {
	return &policyReplicaScheduling{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}}
}

func placement(rs *policyReplicaScheduling, clusters ...string) *policyv1alpha1.Placement {
	return &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters}, ReplicaScheduling: rs}
}

func lower(s string) string { return strings.ToLower(s) }

func rawExtension(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// notes returns the notes of the events of reason on the binding.
func notes(ctx context.Context, g Gomega, rb *workv1alpha2.ResourceBinding, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(c.List(ctx, list, client.InNamespace(rb.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ResourceBinding" && e.Regarding.Name == rb.Name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

func setFreeCPU(ctx context.Context, cluster string, cpus int64) {
	Eventually(func(g Gomega) {
		cl := &clusterv1alpha1.Cluster{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: cluster}, cl)).To(Succeed())
		cl.Status.ResourceSummary.NodeGroups[0].Free[corev1.ResourceCPU] = *resource.NewQuantity(cpus, resource.DecimalSI)
		cl.Status.ResourceSummary.Allocatable[corev1.ResourceCPU] = *resource.NewQuantity(cpus, resource.DecimalSI)
		g.Expect(c.Status().Update(ctx, cl)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

var _ = Describe("Descheduler", func() {
	It("moves a dynamic-weight Deployment's unschedulable replicas to a cluster with room in one write, keeping the ready ones", func(ctx context.Context) {
		createCluster(ctx, "a1", 16)
		createCluster(ctx, "a2", 4)
		rb := binding(ctx, "default", "Deployment", "web", 4, dynamic(), "a1", "a2")
		Expect(placed(ctx, Default, rb)).To(Equal(map[string]int32{"a1": 3, "a2": 1}))
		generation := rb.Generation
		// a1's estimate was wrong: one replica runs there, two wait for room.
		ready(ctx, rb, map[string]int32{"a1": 1, "a2": 1})
		report(ctx, "a1", "default", "Deployment", "web", 2)

		Eventually(func(g Gomega) map[string]int32 { return placed(ctx, g, rb) }).WithContext(ctx).
			Should(Equal(map[string]int32{"a1": 1, "a2": 3}))
		got := &workv1alpha2.ResourceBinding{}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(rb), got)).To(Succeed())
		Expect(got.Generation).To(Equal(generation+1), "one write of spec.clusters")
		Eventually(func(g Gomega) []string { return notes(ctx, g, rb, descheduler.EventReasonDescheduleBindingSucceed) }).WithContext(ctx).
			Should(ConsistOf("Moved 2 replicas unschedulable for 5m0s off a1 (2); now on a1 (1), a2 (3)"))
	})

	It("moves nothing that is ready: a report that lags behind the replicas takes none", func(ctx context.Context) {
		createCluster(ctx, "b1", 16)
		createCluster(ctx, "b2", 4)
		rb := binding(ctx, "default", "Deployment", "api", 4, dynamic(), "b1", "b2")
		ready(ctx, rb, map[string]int32{"b1": 3, "b2": 1})
		report(ctx, "b1", "default", "Deployment", "api", 2)
		Consistently(func(g Gomega) map[string]int32 { return placed(ctx, g, rb) }).WithContext(ctx).WithTimeout(2 * time.Second).
			Should(Equal(map[string]int32{"b1": 3, "b2": 1}))
	})

	It("says so when no other cluster has room, and moves as many as fit once one has", func(ctx context.Context) {
		createCluster(ctx, "c1", 16)
		createCluster(ctx, "c2", 0)
		rb := binding(ctx, "default", "Deployment", "batch", 4, dynamic(), "c1", "c2")
		Expect(placed(ctx, Default, rb)).To(Equal(map[string]int32{"c1": 4}))
		ready(ctx, rb, map[string]int32{"c1": 2})
		report(ctx, "c1", "default", "Deployment", "batch", 2)
		Eventually(func(g Gomega) []string { return notes(ctx, g, rb, descheduler.EventReasonDescheduleBindingFailed) }).WithContext(ctx).
			Should(ConsistOf(ContainSubstring("Replicas unschedulable for 5m0s on c1 (2) stay: no other cluster has room for them")))
		Expect(placed(ctx, Default, rb)).To(Equal(map[string]int32{"c1": 4}))

		// Room for one on c2: one moves (the report changing brings the binding back at once).
		setFreeCPU(ctx, "c2", 1)
		report(ctx, "c1", "default", "Deployment", "batch", 3)
		Eventually(func(g Gomega) map[string]int32 { return placed(ctx, g, rb) }).WithContext(ctx).
			Should(Equal(map[string]int32{"c1": 3, "c2": 1}))
	})

	It("leaves static weights as the user set them", func(ctx context.Context) {
		createCluster(ctx, "d1", 16)
		createCluster(ctx, "d2", 16)
		rs := &policyReplicaScheduling{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted}
		rb := binding(ctx, "default", "Deployment", "fixed", 4, rs, "d1", "d2")
		ready(ctx, rb, map[string]int32{"d1": 0, "d2": 2})
		report(ctx, "d1", "default", "Deployment", "fixed", 2)
		Consistently(func(g Gomega) map[string]int32 { return placed(ctx, g, rb) }).WithContext(ctx).WithTimeout(2 * time.Second).
			Should(Equal(map[string]int32{"d1": 2, "d2": 2}))
	})
})
