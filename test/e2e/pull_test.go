package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/register"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// The mixed fleet, as in the demo: member1 and member3 stay Push; member2 is unjoined and
// registered in Pull mode, so the host has no credentials for it, and its agent runs as a
// process of its own with the member rights register gave it. At the end member2 is joined in
// Push mode again for the other specs.
var _ = Describe("Pull mode: a mixed fleet of two Push members and one Pull member", Ordered, func() {
	const pulled = "member2"
	all := []string{"member1", "member2", "member3"}
	var agent *framework.Agent
	var agentKubeconfig string

	startAgent := func(ctx context.Context) {
		var err error
		agent, err = framework.StartAgent(ctx, agentKubeconfig, GinkgoWriter, "--heartbeat-interval", "1s", "--failure-threshold", "5",
			"--cluster-status-interval", "5s")
		Expect(err).NotTo(HaveOccurred())
	}

	BeforeAll(func(ctx context.Context) {
		_, err := join.Unjoin(ctx, join.UnjoinOptions{Name: pulled, Host: env.Fleet.Host.RESTConfig(), Member: env.Fleet.Member(pulled).RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			// Back to Push for the other specs.
			_, err := register.Unregister(ctx, register.UnregisterOptions{Name: pulled, Member: env.Fleet.Member(pulled).RESTConfig(), Host: env.Fleet.Host.RESTConfig()})
			Expect(err).NotTo(HaveOccurred())
			if agent != nil {
				agent.Kill()
			}
			Expect(env.Join(ctx, pulled)).To(Succeed())
			framework.EventuallyClustersReady(ctx, env.Host, "member1", "member2", "member3")
		}, NodeTimeout(4*time.Minute))

		_, err = env.Register(ctx, pulled)
		Expect(err).NotTo(HaveOccurred())
		dir, err := os.MkdirTemp("", "flotilla-e2e-agent-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		agentKubeconfig, err = env.AgentKubeconfig(ctx, pulled, dir)
		Expect(err).NotTo(HaveOccurred())
		startAgent(ctx)
		framework.EventuallyClustersReady(ctx, env.Host, "member1", "member2", "member3")
		c := &clusterv1alpha1.Cluster{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c)).To(Succeed())
		Expect(c.Spec.SyncMode).To(Equal(clusterv1alpha1.Pull))
		Expect(c.Spec.SecretRef).To(BeNil(), "the host has no credentials for a Pull member")
		Eventually(func(g Gomega) {
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: pulled}, c)).To(Succeed())
			g.Expect(c.Status.NodeSummary).NotTo(BeNil())
			g.Expect(c.Status.NodeSummary.ReadyNum).To(BeNumerically(">", 0), "the agent reports the member's nodes")
		}).WithContext(ctx).Should(Succeed())
	}, NodeTimeout(5*time.Minute))

	It("plays both seed scenarios, the Pull member taking its share", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-pull-scenarios")
		apply := func(parts ...string) {
			data, err := os.ReadFile(scenario(parts...))
			Expect(err).NotTo(HaveOccurred())
			path := filepath.Join(GinkgoT().TempDir(), filepath.Base(scenario(parts...)))
			Expect(os.WriteFile(path, []byte(strings.ReplaceAll(string(data), "namespace: default", "namespace: "+ns)), 0o600)).To(Succeed())
			Expect(framework.Apply(ctx, env.Host, path)).To(Succeed())
		}
		// weighted-pipy: two of three get 1 replica, then 1/1/1 after scaling to 3; the Service
		// reaches all three.
		apply("weighted-pipy", "app.yaml")
		apply("weighted-pipy", "policy.yaml")
		Eventually(func(g Gomega) {
			var ones int
			for _, r := range env.DeploymentReplicas(ctx, ns, "pipy") {
				if r.Spec == 1 && r.Ready == 1 {
					ones++
				}
			}
			g.Expect(ones).To(Equal(2))
		}).WithContext(ctx).Should(Succeed())
		tmpl := &appsv1.Deployment{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pipy"}, tmpl)).To(Succeed())
		// A patch: the fleet's status writes keep changing the template's resourceVersion.
		patch := client.MergeFrom(tmpl.DeepCopy())
		tmpl.Spec.Replicas = ptr.To[int32](3)
		Expect(env.Host.Patch(ctx, tmpl, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, ns, "pipy")
			for _, m := range all {
				g.Expect(got[m]).To(Equal(framework.Replicas{Spec: 1, Ready: 1}), "replicas per member: %v", got)
			}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pipy"}, tmpl)).To(Succeed())
			g.Expect(tmpl.Status.ReadyReplicas).To(BeEquivalentTo(3))
		}).WithContext(ctx).Should(Succeed())
		for _, m := range all {
			Eventually(func() error {
				return env.Members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: "pipy"}, &corev1.Service{})
			}).WithContext(ctx).Should(Succeed(), "Service pipy on %s", m)
		}
		// nginx-override: 1/1 on member1 and member2 (Pull), the override on member1 only.
		apply("nginx-override", "all.yaml")
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, ns, "nginx")
			g.Expect(got).To(Equal(map[string]framework.Replicas{
				"member1": {Spec: 1, Ready: 1}, "member2": {Spec: 1, Ready: 1}, "member3": {Spec: -1, Ready: -1},
			}))
		}).WithContext(ctx).Should(Succeed())
		// The OverridePolicy comes after the Deployment and its policy in the file: member1's
		// first copy may be the template's own, and the override follows.
		key := types.NamespacedName{Namespace: ns, Name: "nginx"}
		Eventually(func(g Gomega) {
			d1, d2 := &appsv1.Deployment{}, &appsv1.Deployment{}
			g.Expect(env.Members["member1"].Get(ctx, key, d1)).To(Succeed())
			g.Expect(env.Members[pulled].Get(ctx, key, d2)).To(Succeed())
			g.Expect(d1.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.internal/library/nginx:1.27"))
			g.Expect(d1.Labels).To(HaveKeyWithValue("site", "primary"))
			g.Expect(d2.Spec.Template.Spec.Containers[0].Image).To(Equal("docker.io/library/nginx:1.27"))
			g.Expect(d2.Labels).NotTo(HaveKey("site"))
		}).WithContext(ctx).Should(Succeed())
		Eventually(bindingConditionsTrue(ctx, ns, "nginx-deployment")).WithContext(ctx).Should(Succeed())
	})

	It("divides a Deployment over all three; the Pull member runs its share and its status comes back", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-pull-app")
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
		Expect(env.Host.Create(ctx, dep)).To(Succeed())
		pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: all},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					},
				},
			}}
		Expect(env.Host.Create(ctx, pp)).To(Succeed())
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, ns, "web")
			for _, m := range []string{"member1", "member2", "member3"} {
				g.Expect(got[m]).To(Equal(framework.Replicas{Spec: 1, Ready: 1}), "replicas per member: %v", got)
			}
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			tmpl := &appsv1.Deployment{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, tmpl)).To(Succeed())
			g.Expect(tmpl.Status.ReadyReplicas).To(BeEquivalentTo(3), "the template's status aggregates all three, the Pull member's too")
		}).WithContext(ctx).Should(Succeed())
		Eventually(bindingConditionsTrue(ctx, ns, "web-deployment")).WithContext(ctx).Should(Succeed())
	})

	It("applies Works to the Pull member about as fast as to the Push members", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-pull-latency")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1", "member2", "member3"))).To(Succeed())
		seen := newFirstSeen()
		stop := make(chan struct{})
		defer close(stop)
		watchWorks(ctx, ns, seen, stop)
		for _, m := range []string{"member1", "member2", "member3"} {
			watchMemberConfigMaps(m, ns, seen, stop)
		}
		const n = 20
		for i := range n {
			Expect(env.Host.Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", i), "v"))).To(Succeed())
			time.Sleep(150 * time.Millisecond)
		}
		expectExactlyOnce(ctx, ns, n, "member1", "member2", "member3")
		lat := map[string][]time.Duration{}
		for i := range n {
			name := fmt.Sprintf("cm-%d", i)
			for _, m := range []string{"member1", "member2", "member3"} {
				w, ok1 := seen.get("work/" + m + "/" + name)
				o, ok2 := seen.get("member/" + m + "/" + name)
				Expect(ok1 && ok2).To(BeTrue(), "%s in %s: work seen %v, member object seen %v", name, m, ok1, ok2)
				lat[m] = append(lat[m], o.Sub(w))
			}
		}
		for _, m := range []string{"member1", "member2", "member3"} {
			mode := "Push"
			if m == pulled {
				mode = "Pull"
			}
			p50, mx := percentile(lat[m], 50), percentile(lat[m], 100)
			fmt.Fprintf(GinkgoWriter, "PULL-VS-PUSH %s (%s): Work created → member object, %d ConfigMaps: p50 %s, max %s\n", m, mode, n, p50, mx)
			AddReportEntry(fmt.Sprintf("Work→member apply %s (%s)", m, mode), fmt.Sprintf("p50 %s max %s", p50, mx))
		}
		cur, peak := agent.RSS()
		fmt.Fprintf(GinkgoWriter, "PULL-AGENT memory: RSS %d KiB, peak %d KiB\n", cur, peak)
		AddReportEntry("Pull agent memory", fmt.Sprintf("RSS %d KiB, peak %d KiB", cur, peak))
	})

	It("loses nothing when the agent is SIGKILLed and the host apiserver restarts mid-propagation", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-pull-restart")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1", "member2", "member3"))).To(Succeed())
		const n = 30
		for i := range n / 2 {
			Expect(env.Host.Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", i), "v"))).To(Succeed())
		}
		agent.Kill()
		// The manager loses its leader Lease while the host is down and stops, as it would in
		// a Pod; it is started again below.
		host := env.Fleet.Host
		Expect(host.StopAPIServer()).To(Succeed())
		Expect(host.StartAPIServer(ctx)).To(Succeed())
		_ = manager.Stop()
		cfg, err := env.ManagerConfig(ctx)
		Expect(err).NotTo(HaveOccurred())
		manager, err = startManager(cfg)
		Expect(err).NotTo(HaveOccurred())
		for i := n / 2; i < n; i++ {
			Eventually(func() error {
				return env.Host.Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", i), "v"))
			}).WithContext(ctx).Should(Succeed())
		}
		startAgent(ctx)
		expectExactlyOnce(ctx, ns, n, "member1", "member2", "member3")
		framework.EventuallyClustersReady(ctx, env.Host, "member1", "member2", "member3")
	})
})

// firstSeen records when a key was first seen.
type firstSeen struct {
	mu sync.Mutex
	at map[string]time.Time
}

func newFirstSeen() *firstSeen { return &firstSeen{at: map[string]time.Time{}} }

func (f *firstSeen) see(key string) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.at[key]; !ok {
		f.at[key] = now
	}
}

func (f *firstSeen) get(key string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.at[key]
	return t, ok
}

// watchWorks records when each Work of a template of ns is first seen, as
// "work/<cluster>/<template name>".
func watchWorks(ctx context.Context, ns string, seen *firstSeen, stop chan struct{}) {
	dyn, err := dynamic.NewForConfig(env.Fleet.Host.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := f.ForResource(schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha1", Resource: "works"}).Informer()
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetAnnotations()[wellknown.ResourceBindingNamespaceAnnotation] != ns {
			return
		}
		cluster, ok := bindings.ClusterOfWork(u.GetNamespace())
		if !ok {
			return
		}
		manifests, _, _ := unstructured.NestedSlice(u.Object, "spec", "workload", "manifests")
		for _, m := range manifests {
			if mm, ok := m.(map[string]any); ok {
				name, _, _ := unstructured.NestedString(mm, "metadata", "name")
				seen.see("work/" + cluster + "/" + name)
			}
		}
	}})
	Expect(err).NotTo(HaveOccurred())
	f.Start(stop)
	Expect(toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced)).To(BeTrue())
}

// watchMemberConfigMaps records when each ConfigMap of ns first appears in member, as
// "member/<member>/<name>".
func watchMemberConfigMaps(member, ns string, seen *firstSeen, stop chan struct{}) {
	kube, err := kubernetes.NewForConfig(env.Fleet.Member(member).RESTConfig())
	Expect(err).NotTo(HaveOccurred())
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().ConfigMaps().Informer()
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Labels[wellknown.ManagedLabel] == wellknown.ManagedLabelValue {
			seen.see("member/" + member + "/" + cm.Name)
		}
	}})
	Expect(err).NotTo(HaveOccurred())
	f.Start(stop)
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(time.Millisecond)
}
