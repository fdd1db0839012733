package e2e

import (
	"context"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// The spec drives the plugin binary as a user would: cordon a member, see that nothing moves
// (NoSchedule does not evict), rebalance and see the replicas leave the cordoned member,
// uncordon and see that nothing comes back until the next rebalance.
var _ = Describe("Rebalance: cordon, rebalance, uncordon", Ordered, func() {
	const ns, name = "rebalance-e2e", "spread"
	var plugin string

	flotilla := func(ctx context.Context, args ...string) string {
		GinkgoHelper()
		cmd := exec.CommandContext(ctx, plugin, append(args, "--kubeconfig", env.Fleet.KubeconfigPath(env.Fleet.Host.Name))...)
		out, err := cmd.CombinedOutput()
		GinkgoWriter.Printf("$ kubectl flotilla %s\n%s", strings.Join(args, " "), out)
		Expect(err).NotTo(HaveOccurred(), "kubectl flotilla %v: %s", args, out)
		return string(out)
	}
	replicas := func(ctx context.Context) map[string]framework.Replicas {
		return env.DeploymentReplicas(ctx, ns, name)
	}
	scheduled := func(ctx context.Context, g Gomega) []workv1alpha2.TargetCluster {
		rb := &workv1alpha2.ResourceBinding{}
		g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-deployment"}, rb)).To(Succeed())
		return rb.Spec.Clusters
	}

	BeforeAll(func(ctx context.Context) {
		var err error
		plugin, err = framework.BuildPlugin(ctx)
		Expect(err).NotTo(HaveOccurred(), "build the plugin")

		templateNamespace(ctx, ns)
		weight := func(m string) policyv1alpha1.StaticClusterWeight {
			return policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}, Weight: 1}
		}
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2", "member3"}},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
						WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
							weight("member1"), weight("member2"), weight("member3"),
						}},
					},
				},
			},
		})).To(Succeed())
		labels := map[string]string{"app": name}
		Expect(env.Host.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](6),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
				},
			},
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			// Leave member2 schedulable and the namespace gone for the other specs.
			c := &clusterv1alpha1.Cluster{}
			if err := env.Host.Get(ctx, types.NamespacedName{Name: "member2"}, c); err == nil {
				patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
				c.Spec.Taints = withoutTaint(c.Spec.Taints, wellknown.TaintClusterCordoned)
				_ = env.Host.Patch(ctx, c, patch)
			}
			_ = env.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	})

	It("1. divides 6 replicas 2/2/2 over the three members", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			for m, r := range replicas(ctx) {
				g.Expect(r).To(Equal(framework.Replicas{Spec: 2, Ready: 2}), "member %s", m)
			}
		}).WithContext(ctx).Should(Succeed())
	})

	It("2. cordoning member2 moves nothing: NoSchedule does not evict", func(ctx context.Context) {
		Expect(flotilla(ctx, "cordon", "member2")).To(Equal("cluster/member2 cordoned\n"))
		c := &clusterv1alpha1.Cluster{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Name: "member2"}, c)).To(Succeed())
		Expect(c.Spec.Taints).To(ContainElement(And(HaveField("Key", wellknown.TaintClusterCordoned), HaveField("Effect", corev1.TaintEffectNoSchedule))))
		// The scheduler looks at every binding again when a cluster's taints change; what it
		// decides shows within a scheduling cycle. The binding and the members stay as they were.
		Consistently(func(g Gomega) {
			g.Expect(scheduled(ctx, g)).To(ConsistOf(
				workv1alpha2.TargetCluster{Name: "member1", Replicas: 2},
				workv1alpha2.TargetCluster{Name: "member2", Replicas: 2},
				workv1alpha2.TargetCluster{Name: "member3", Replicas: 2}))
			g.Expect(replicas(ctx)["member2"]).To(Equal(framework.Replicas{Spec: 2, Ready: 2}))
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())
	})

	It("3. a rebalance re-spreads the replicas away from the cordoned member", func(ctx context.Context) {
		start := time.Now()
		out := flotilla(ctx, "rebalance", "deployment/"+name, "-n", ns, "--wait", "--ttl", "60")
		Expect(out).To(MatchRegexp(`deployment/spread\s+rebalance-e2e\s+Successful`))
		Eventually(func(g Gomega) {
			g.Expect(replicas(ctx)).To(Equal(map[string]framework.Replicas{
				"member1": {Spec: 3, Ready: 3}, "member2": {Spec: -1, Ready: -1}, "member3": {Spec: 3, Ready: 3},
			}))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("rebalance to 3/0/3 Ready: %s\n", time.Since(start).Round(100*time.Millisecond))
	})

	It("4. uncordoning brings nothing back until the next rebalance", func(ctx context.Context) {
		Expect(flotilla(ctx, "uncordon", "member2")).To(Equal("cluster/member2 uncordoned\n"))
		Consistently(func(g Gomega) {
			g.Expect(scheduled(ctx, g)).To(ConsistOf(
				workv1alpha2.TargetCluster{Name: "member1", Replicas: 3},
				workv1alpha2.TargetCluster{Name: "member3", Replicas: 3}))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		flotilla(ctx, "rebalance", "deployment/"+name, "-n", ns, "--wait", "--ttl", "0")
		Eventually(func(g Gomega) {
			for m, r := range replicas(ctx) {
				g.Expect(r).To(Equal(framework.Replicas{Spec: 2, Ready: 2}), "member %s", m)
			}
		}).WithContext(ctx).Should(Succeed())
	})
})

func withoutTaint(taints []corev1.Taint, key string) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Key != key {
			out = append(out, t)
		}
	}
	return out
}
