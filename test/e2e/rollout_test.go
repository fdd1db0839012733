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

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dashboard"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// A progressive rollout on the shared fleet, driven as a user would: an image edit reaches
// the canary stage (member1) first and soaks there, the next stage waits for `rollout
// approve`, and a revision whose pods never become Ready (an unschedulable nodeSelector)
// halts at the canary with the other members still on the previous revision and serving,
// until `rollout undo` brings the canary back.
var _ = Describe("Progressive rollout: stages, soak, approval, halt and undo", Ordered, func() {
	const ns, name = "rollout-e2e", "web"
	var plugin string
	members := []string{"member1", "member2", "member3"}

	flotilla := func(ctx context.Context, args ...string) string {
		GinkgoHelper()
		cmd := exec.CommandContext(ctx, plugin, append(args, "-n", ns, "--kubeconfig", env.Fleet.KubeconfigPath(env.Fleet.Host.Name))...)
		out, err := cmd.CombinedOutput()
		GinkgoWriter.Printf("$ kubectl flotilla %s\n%s", strings.Join(args, " "), out)
		Expect(err).NotTo(HaveOccurred(), "kubectl flotilla %v: %s", args, out)
		return string(out)
	}
	// images returns, per member, the Deployment's image and its ready replicas.
	type state struct {
		Image string
		Ready int32
	}
	images := func(ctx context.Context, g Gomega) map[string]state {
		out := map[string]state{}
		for _, m := range members {
			d := &appsv1.Deployment{}
			g.Expect(env.Members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
			out[m] = state{Image: d.Spec.Template.Spec.Containers[0].Image, Ready: d.Status.ReadyReplicas}
		}
		return out
	}
	rollout := func(ctx context.Context, g Gomega) *rolloutsv1alpha1.Rollout {
		ro := &rolloutsv1alpha1.Rollout{}
		g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-deployment"}, ro)).To(Succeed())
		return ro
	}
	edit := func(ctx context.Context, change func(*appsv1.Deployment)) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
			change(d)
			g.Expect(env.Host.Update(ctx, d)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
	}
	setImage := func(image string, nodeSelector map[string]string) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = image
			d.Spec.Template.Spec.NodeSelector = nodeSelector
		}
	}

	BeforeAll(func(ctx context.Context) {
		var err error
		plugin, err = framework.BuildPlugin(ctx)
		Expect(err).NotTo(HaveOccurred(), "build the plugin")

		templateNamespace(ctx, ns)
		Expect(env.Host.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members}},
			},
		})).To(Succeed())
		Expect(env.Host.Create(ctx, &rolloutsv1alpha1.RolloutPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: rolloutsv1alpha1.RolloutPolicySpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
				Stages: []rolloutsv1alpha1.Stage{
					{Name: "canary", Clusters: &rolloutsv1alpha1.StageClusters{Names: []string{"member1"}},
						Soak:       &metav1.Duration{Duration: 2 * time.Second},
						HealthGate: &rolloutsv1alpha1.HealthGate{ProgressDeadline: &metav1.Duration{Duration: 8 * time.Second}}},
					{Name: "rest", Approval: rolloutsv1alpha1.ApprovalBefore},
				},
			},
		})).To(Succeed())
		labels := map[string]string{"app": name}
		Expect(env.Host.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1"}}},
				},
			},
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			_ = env.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &rolloutsv1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			_ = env.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
		Eventually(func(g Gomega) {
			for m, s := range images(ctx, g) {
				g.Expect(s).To(Equal(state{"registry.example/web:1", 2}), "member %s", m)
			}
			ro := rollout(ctx, g)
			g.Expect(ro.Status.Phase).To(Equal(rolloutsv1alpha1.PhaseComplete))
			g.Expect(ro.Status.StableRevision).To(Equal(ro.Status.Revision))
		}).WithContext(ctx).Should(Succeed())
	})

	It("1. an image edit reaches the canary, soaks, and waits for approval before the rest", func(ctx context.Context) {
		start := time.Now()
		edit(ctx, setImage("registry.example/web:2", nil))
		Eventually(func(g Gomega) {
			g.Expect(rollout(ctx, g).Status.Phase).To(Equal(rolloutsv1alpha1.PhaseWaitingForApproval))
		}).WithContext(ctx).Should(Succeed())
		canary := time.Since(start)
		Eventually(func(g Gomega) {
			g.Expect(images(ctx, g)).To(Equal(map[string]state{
				"member1": {"registry.example/web:2", 2}, "member2": {"registry.example/web:1", 2}, "member3": {"registry.example/web:1", 2}}))
		}).WithContext(ctx).Should(Succeed())
		ro := rollout(ctx, Default)
		s := ro.Status.Stages[0]
		Expect(s.Phase).To(Equal(rolloutsv1alpha1.StageComplete))
		Expect(s.CompletedAt.Sub(s.StartedAt.Time)).To(BeNumerically(">=", 2*time.Second), "the canary soaked")
		Expect(canary).To(BeNumerically(">=", 2*time.Second), "the canary soaked")
		Expect(ro.Status.Stages[1].Phase).To(Equal(rolloutsv1alpha1.StageWaitingForApproval))
		Expect(flotilla(ctx, "rollout", "status", "deploy/"+name)).To(And(ContainSubstring("WaitingForApproval"), MatchRegexp(`member2\s+rest\s+\S+\s+\S+\s+Waiting`)))
		GinkgoWriter.Printf("canary stage (apply, Ready, soak 2s): %s\n", canary.Round(100*time.Millisecond))
	})

	It("2. paused, an approval opens nothing; resumed, the next stage opens and the revision becomes the stable one", func(ctx context.Context) {
		Expect(flotilla(ctx, "rollout", "pause", "deploy/"+name)).To(ContainSubstring("paused"))
		Expect(flotilla(ctx, "rollout", "approve", "deploy/"+name)).To(ContainSubstring("stage rest approved (before)"))
		Eventually(func(g Gomega) {
			g.Expect(rollout(ctx, g).Status.Phase).To(Equal(rolloutsv1alpha1.PhasePaused))
		}).WithContext(ctx).Should(Succeed())
		Expect(images(ctx, Default)).To(HaveKeyWithValue("member2", state{"registry.example/web:1", 2}))
		start := time.Now()
		Expect(flotilla(ctx, "rollout", "resume", "deploy/"+name)).To(ContainSubstring("resumed"))
		Eventually(func(g Gomega) {
			for m, s := range images(ctx, g) {
				g.Expect(s).To(Equal(state{"registry.example/web:2", 2}), "member %s", m)
			}
			ro := rollout(ctx, g)
			g.Expect(ro.Status.Phase).To(Equal(rolloutsv1alpha1.PhaseComplete))
			g.Expect(ro.Status.StableRevision).To(Equal(ro.Status.Revision))
		}).WithContext(ctx).Should(Succeed())
		GinkgoWriter.Printf("rest stage after resume (2 members Ready): %s\n", time.Since(start).Round(100*time.Millisecond))
	})

	It("3. a revision whose pods never become Ready halts at the canary, the others still serving the previous one; undo restores it", func(ctx context.Context) {
		stable := rollout(ctx, Default).Status.StableRevision
		edit(ctx, setImage("registry.example/web:3", map[string]string{"rollout-e2e/no-such-node": "true"}))
		Eventually(func(g Gomega) {
			ro := rollout(ctx, g)
			g.Expect(ro.Status.Phase).To(Equal(rolloutsv1alpha1.PhaseHalted))
			g.Expect(ro.Status.Halt).NotTo(BeNil())
			g.Expect(ro.Status.Halt.Cluster).To(Equal("member1"))
			g.Expect(ro.Status.Halt.Stage).To(Equal("canary"))
		}).WithContext(ctx).Should(Succeed())
		Expect(images(ctx, Default)).To(And(
			HaveKeyWithValue("member2", state{"registry.example/web:2", 2}),
			HaveKeyWithValue("member3", state{"registry.example/web:2", 2})))
		Expect(images(ctx, Default)["member1"].Image).To(Equal("registry.example/web:3"))
		Eventually(func(g Gomega) {
			evs := framework.EventsFor(ctx, g, env.Host, ns, "Deployment", name)
			g.Expect(evs).To(ContainElement(And(HaveField("Reason", rolloutsv1alpha1.EventHalted), HaveField("Note", ContainSubstring("member1")))))
		}).WithContext(ctx).Should(Succeed())
		// The dashboard shows the halt live, and which cluster runs the new revision.
		dctx, stop := context.WithCancel(ctx)
		defer stop()
		board, err := dashboard.New(dctx, env.Fleet.Host.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			v, err := board.View(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.RolloutsOff).To(BeEmpty())
			g.Expect(v.Rollouts).To(ContainElement(And(
				HaveField("Namespace", ns), HaveField("Phase", "Halted"), HaveField("Halt", ContainSubstring("cluster member1")),
				HaveField("Clusters", ContainElement(And(HaveField("Name", "member1"), HaveField("Current", true), HaveField("State()", "bad")))))))
		}).WithContext(ctx).Should(Succeed())

		Expect(flotilla(ctx, "rollout", "undo", "deploy/"+name)).To(ContainSubstring("rolled back to " + stable))
		Eventually(func(g Gomega) {
			for m, s := range images(ctx, g) {
				g.Expect(s).To(Equal(state{"registry.example/web:2", 2}), "member %s", m)
			}
			g.Expect(rollout(ctx, g).Status.Phase).To(Equal(rolloutsv1alpha1.PhaseRolledBack))
		}).WithContext(ctx).Should(Succeed())
	})
})
