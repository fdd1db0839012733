package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// The suite's members are heterogeneous (e2e_suite_test.go): member1 and member2 have two
// large nodes (8 CPUs) and one small node (2 CPUs), member3 has two large nodes with 4 GPUs
// each. The scheduler estimates room node by node, so replicas go where they fit and every
// one of them runs.
var _ = Describe("Scheduling by what fits on the members' nodes", Ordered, func() {
	policy := func(ns, name string, members []string, rs *policyv1alpha1.ReplicaSchedulingStrategy) *policyv1alpha1.PropagationPolicy {
		return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members},
					ReplicaScheduling: rs}}}
	}
	cleanup := func(ns, name string) {
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	}
	// The specs leave the members as they found them: after the last one, the cleanup waits
	// until none of the specs' pods is left on any member, terminating ones included, and the
	// Clusters report the room that frees (other specs size their workloads by it). Their
	// free CPU is not compared with what it was before the first spec: the fleet is shared,
	// and other specs' workloads may still be moving then (a small pod placed on a member
	// since takes its room for good).
	namespaces := []string{"fit-e2e", "gpu-e2e", "burst-e2e"}
	BeforeAll(func() {
		DeferCleanup(func(ctx context.Context) {
			podsGone(ctx, namespaces...)
			heldStill(ctx, "the members' free CPU", func(m string) int64 {
				var free int64
				Eventually(func(g Gomega) { free = freeCPU(ctx, g, m) }).WithContext(ctx).Should(Succeed())
				return free
			})
		})
	})
	placed := func(ctx context.Context, ns, name string) map[string]framework.Replicas {
		out := map[string]framework.Replicas{}
		for m, r := range env.DeploymentReplicas(ctx, ns, name) {
			if r.Spec > 0 {
				out[m] = r
			}
		}
		return out
	}

	It("aggregates 5-CPU replicas only as far as the large nodes hold them, all Ready", func(ctx context.Context) {
		// By summed free CPU member1 holds three (2 x 8 + 2 = 18 CPUs): dividing by sums put
		// three there, and the third stayed Pending. Node by node it holds two.
		const ns, name = "fit-e2e", "large-only"
		templateNamespace(ctx, ns)
		cleanup(ns, name)
		Expect(env.Host.Create(ctx, policy(ns, name, []string{"member1", "member2"}, &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated}))).To(Succeed())
		Expect(env.Host.Create(ctx, deployment(ns, name, 4, resource.MustParse("5"), nil))).To(Succeed())
		Eventually(func() map[string]framework.Replicas { return placed(ctx, ns, name) }).WithContext(ctx).
			Should(Equal(map[string]framework.Replicas{"member1": {Spec: 2, Ready: 2}, "member2": {Spec: 2, Ready: 2}}))
	})

	It("puts a GPU workload only where GPUs are free, whatever the static weights say", func(ctx context.Context) {
		const ns, name = "gpu-e2e", "trainer"
		templateNamespace(ctx, ns)
		cleanup(ns, name)
		var weights []policyv1alpha1.StaticClusterWeight
		for _, m := range []string{"member1", "member2", "member3"} {
			weights = append(weights, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}, Weight: 1})
		}
		Expect(env.Host.Create(ctx, policy(ns, name, []string{"member1", "member2", "member3"}, &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: weights}}))).To(Succeed())
		d := deployment(ns, name, 3, resource.MustParse("100m"), nil)
		c := &d.Spec.Template.Spec.Containers[0]
		c.Resources.Requests[localcluster.ResourceGPU] = resource.MustParse("1")
		c.Resources.Limits = corev1.ResourceList{localcluster.ResourceGPU: resource.MustParse("1")}
		Expect(env.Host.Create(ctx, d)).To(Succeed())
		Eventually(func() map[string]framework.Replicas { return placed(ctx, ns, name) }).WithContext(ctx).
			Should(Equal(map[string]framework.Replicas{"member3": {Spec: 3, Ready: 3}}))
	})

	It("does not overfill the favourite member with 20 workloads created at once", func(ctx context.Context) {
		// Static weights 10:1:1 favour member1, which holds nine 2-CPU replicas on an empty
		// fleet (four on each large node, one on the small one). Without holds, every binding
		// saw that room and most of the twenty went there; the rest stayed Pending.
		const ns = "burst-e2e"
		// The specs before this one leave pods terminating on the members: wait for them to
		// be gone. Specs of other containers may have left small pods running (a 10m pod takes
		// a 2-CPU slot from a node), or may leave the fleet moving (a member unjoined and
		// joined again, its workloads moved away and back): the burst is sized by the slots
		// there are once they hold still for two of the Clusters' status refreshes, more than
		// member1 holds, at most twenty. Pods of other specs deleted while the burst's
		// placements are held delay the holds' release (docs/guides/scheduling.md, "No double
		// booking"): the last workloads may wait for the hold TTL, which the wait below covers.
		podsGone(ctx, "fit-e2e", "gpu-e2e")
		slots := heldStill(ctx, "the members' 2-CPU slots", func(m string) int64 {
			return replicasThatFit(ctx, m, resource.MustParse("2"))
		})
		n := int(min(20, slots["member1"]+slots["member2"]+slots["member3"]))
		Expect(n).To(BeNumerically(">", slots["member1"]), "the members have room for more 2-CPU replicas than member1 holds: %v", slots)
		GinkgoWriter.Printf("2-CPU slots by member: %v; %d workloads\n", slots, n)
		templateNamespace(ctx, ns)
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
		var weights []policyv1alpha1.StaticClusterWeight
		for m, w := range map[string]int64{"member1": 10, "member2": 1, "member3": 1} {
			weights = append(weights, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}, Weight: w})
		}
		p := policy(ns, "all", []string{"member1", "member2", "member3"}, &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: weights}})
		p.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}}
		Expect(env.Host.Create(ctx, p)).To(Succeed())
		for i := range n {
			Expect(env.Host.Create(ctx, deployment(ns, fmt.Sprintf("w%02d", i), 1, resource.MustParse("2"), nil))).To(Succeed())
		}
		// The scheduler's part is to place each workload within the room it measured, not
		// more on member1 than fits there: checked by the placements, not by Ready pods,
		// which other specs' pods on the shared members (a 10m pod landing on the small node
		// after the slots were counted) can keep Pending whatever the placement.
		Eventually(func(g Gomega) {
			byMember := map[string]int64{}
			for i := range n {
				got := placed(ctx, ns, fmt.Sprintf("w%02d", i))
				g.Expect(got).To(HaveLen(1), "w%02d is placed on one member; %s", i, bindingState(ctx, ns, fmt.Sprintf("w%02d", i)))
				for m, r := range got {
					g.Expect(r.Spec).To(BeEquivalentTo(1), "w%02d on %s", i, m)
					byMember[m]++
				}
			}
			g.Expect(byMember["member1"]).To(BeNumerically("<=", slots["member1"]), "workloads on member1, which holds %d (placed by member: %v)", slots["member1"], byMember)
		}).WithContext(ctx).WithTimeout(ledger.DefaultTTL + time.Minute).Should(Succeed())
		GinkgoWriter.Printf("placed within the slots; pods not Ready: %v\n", notReady(ctx, ns, n))
	})
})

// clusterStatusRefresh is two of the suite's Cluster status refreshes (every 5 s): a figure
// read this far apart and unchanged has held still across a refresh.
const clusterStatusRefresh = 10 * time.Second

// podsGone waits until no member holds a pod in the namespaces, terminating ones included
// (a terminating pod still takes its node's room).
func podsGone(ctx context.Context, namespaces ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for m, c := range env.Members {
			for _, ns := range namespaces {
				pods := &corev1.PodList{}
				g.Expect(c.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
				names := make([]string, 0, len(pods.Items))
				for _, p := range pods.Items {
					names = append(names, p.Name)
				}
				g.Expect(names).To(BeEmpty(), "pods left in %s on %s", ns, m)
			}
		}
	}).WithContext(ctx).Should(Succeed())
}

// heldStill reads a figure of every member until two reads a Cluster status refresh apart
// agree, and returns the last.
func heldStill(ctx context.Context, what string, read func(member string) int64) map[string]int64 {
	GinkgoHelper()
	var last map[string]int64
	Eventually(func() bool {
		now := map[string]int64{}
		for m := range env.Members {
			now[m] = read(m)
		}
		still := maps.Equal(now, last)
		last = now
		return still
	}).WithContext(ctx).WithPolling(clusterStatusRefresh).Should(BeTrue(), "%s hold still", what)
	return last
}

// notReady lists the burst's workloads whose member replica is not Ready, for the log.
func notReady(ctx context.Context, ns string, n int) []string {
	var out []string
	for i := range n {
		name := fmt.Sprintf("w%02d", i)
		for m, r := range env.DeploymentReplicas(ctx, ns, name) {
			if r.Spec > 0 && r.Ready < r.Spec {
				out = append(out, name+" on "+m)
			}
		}
	}
	return out
}

// replicasThatFit is how many replicas requesting cpu fit on a member's nodes now, node by
// node, from the node groups its Cluster reports (what the scheduler estimates from).
func replicasThatFit(ctx context.Context, member string, cpu resource.Quantity) int64 {
	var fit int64
	Eventually(func(g Gomega) {
		c := &clusterv1alpha1.Cluster{}
		g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: member}, c)).To(Succeed())
		rs := c.Status.ResourceSummary
		g.Expect(rs).NotTo(BeNil(), "%s reports no resource summary yet", member)
		g.Expect(rs.NodeGroups).NotTo(BeEmpty(), "%s reports no node groups yet", member)
		fit = estimate.New(&workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: cpu}}).
			Replicas(rs.NodeGroups, nil)
	}).WithContext(ctx).Should(Succeed())
	return fit
}

// bindingState says where a Deployment's binding places it and why, for a failure message.
func bindingState(ctx context.Context, ns, name string) string {
	return bindingStateOf(ctx, ns, "Deployment", name)
}

// bindingStateOf says where the binding of a template of kind places it and why, for a
// failure message.
func bindingStateOf(ctx context.Context, ns, kind, name string) string {
	rb := &workv1alpha2.ResourceBinding{}
	if err := env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: detector.BindingName(kind, name)}, rb); err != nil {
		return "its binding: " + err.Error()
	}
	var conds []string
	for _, c := range rb.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("its binding places %v, conditions %v", targetReplicas(rb), conds)
}

// podState says, for a failure message, what a member's pods of a Deployment wait for: their
// phase, node and the PodScheduled condition's message, and the member's free CPU.
func podState(ctx context.Context, member, ns, name string) string {
	pods := &corev1.PodList{}
	if err := env.Members[member].List(ctx, pods, client.InNamespace(ns)); err != nil {
		return "its pods: " + err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, name+"-") {
			continue
		}
		state := fmt.Sprintf("%s %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				state += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
			}
		}
		out = append(out, state)
	}
	return fmt.Sprintf("its pods on %s: %v", member, out)
}
