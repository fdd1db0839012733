package fleetview_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/fleetview"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fields splits the output's lines into whitespace-separated fields, so that checks do not
// depend on column widths.
func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		ls = append(ls, strings.Join(strings.Fields(l), " "))
	}
	return ls
}

func setWorkStatus(ctx context.Context, w *workv1alpha1.Work, applied metav1.ConditionStatus, reason, message string, health workv1alpha1.ResourceHealth, status string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		env.Get(ctx, g, w)
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: wellknown.WorkConditionApplied, Status: applied,
			Reason: reason, Message: message, ObservedGeneration: w.Generation})
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
			Identifier: workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments",
				Namespace: "shop", Name: "web"},
			Health: health,
		}}
		if status != "" {
			w.Status.ManifestStatuses[0].Status = &runtime.RawExtension{Raw: []byte(status)}
		}
		g.Expect(env.Host.Status().Update(ctx, w)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

var _ = Describe("status", Ordered, func() {
	var rb *workv1alpha2.ResourceBinding
	var works map[string]*workv1alpha1.Work

	BeforeAll(func(ctx SpecContext) {
		env.TemplateNamespace(ctx, "shop")
		dep := fleettest.Deployment("shop", "web", 3)
		Expect(env.Host.Create(ctx, dep)).To(Succeed())
		dep.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}

		rb = env.Binding(dep, 3, fleettest.Scheduled("member1", 2, "member2", 1)...).(*workv1alpha2.ResourceBinding)
		// The claim is on the binding, as the detector writes it.
		rb.Annotations = map[string]string{
			wellknown.PropagationPolicyNamespaceAnnotation: "shop",
			wellknown.PropagationPolicyNameAnnotation:      "web-pp",
		}
		Expect(env.Host.Create(ctx, rb)).To(Succeed())
		rb.Status.Conditions = []metav1.Condition{
			{Type: wellknown.ConditionScheduled, Status: metav1.ConditionTrue, Reason: wellknown.ReasonBindingScheduled, LastTransitionTime: metav1.Now()},
			{Type: wellknown.ConditionFullyApplied, Status: metav1.ConditionFalse, Reason: wellknown.ReasonNotFullyApplied, LastTransitionTime: metav1.Now()},
		}
		rb.Status.ClustersReady = "1/2"
		Expect(env.Host.Status().Update(ctx, rb)).To(Succeed())

		works = map[string]*workv1alpha1.Work{}
		for _, m := range []string{"member1", "member2"} {
			w := fleettest.Work(m, dep)
			w.Finalizers = nil
			fleettest.BindWork(w, rb)
			Expect(env.Host.Create(ctx, w)).To(Succeed())
			works[m] = w
		}
		setWorkStatus(ctx, works["member1"], metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful, "", workv1alpha1.ResourceHealthy,
			`{"replicas":2,"readyReplicas":2,"availableReplicas":2}`)
		setWorkStatus(ctx, works["member2"], metav1.ConditionFalse, wellknown.ReasonAppliedFailed,
			"deployments.apps \"web\" is forbidden:\n exceeded quota", workv1alpha1.ResourceUnknownHealth, "")
	})

	It("prints the template, its policy, its binding and one line per member", func(ctx SpecContext) {
		start := time.Now()
		tree, err := host.Status(ctx, fleetview.StatusRequest{Kind: "deploy", Namespace: "shop", Name: "web"})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintStatus(&out, tree, "")).To(Succeed())
		GinkgoWriter.Printf("status in %s:\n%s", time.Since(start), out.String())
		Expect(lines(out.String())).To(Equal([]string{
			"Deployment shop/web",
			"└── PropagationPolicy shop/web-pp",
			"└── ResourceBinding shop/web-deployment Scheduled=True FullyApplied=False (FullyAppliedFailed) READY 1/2",
			"├── member1 Applied=True Healthy ready 2/2",
			`└── member2 Applied=False (AppliedFailed) Unknown ready - error: deployments.apps "web" is forbidden: exceeded quota`,
		}))

		out.Reset()
		Expect(fleetview.PrintStatus(&out, tree, "wide")).To(Succeed())
		Expect(out.String()).To(ContainSubstring("replicas 2   work " + works["member1"].Namespace + "/" + works["member1"].Name))

		out.Reset()
		Expect(fleetview.PrintStatus(&out, tree, "yaml")).To(Succeed())
		Expect(out.String()).To(ContainSubstring("readyReplicas: 2/2"))
		Expect(out.String()).To(ContainSubstring("appliedReason: AppliedFailed"))
	})

	It("accepts the kind as users type it and fails on what does not exist", func(ctx SpecContext) {
		for _, kind := range []string{"deployment", "Deployment", "deployments.apps", "deployments.v1.apps"} {
			tree, err := host.Status(ctx, fleetview.StatusRequest{Kind: kind, Namespace: "shop", Name: "web"})
			Expect(err).NotTo(HaveOccurred(), kind)
			Expect(tree.Binding).NotTo(BeNil())
		}
		_, err := host.Status(ctx, fleetview.StatusRequest{Kind: "deploy", Namespace: "shop", Name: "nope"})
		Expect(err).To(MatchError(ContainSubstring(`"nope" not found`)))
		_, err = host.Status(ctx, fleetview.StatusRequest{Kind: "frobs", Namespace: "shop", Name: "web"})
		Expect(err).To(MatchError(ContainSubstring(`doesn't have a resource type "frobs"`)))
	})

	It("says when a template has no policy or binding", func(ctx SpecContext) {
		cm := fleettest.ConfigMap("shop", "loose", map[string]string{"a": "b"})
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		tree, err := host.Status(ctx, fleetview.StatusRequest{Kind: "cm", Namespace: "shop", Name: "loose"})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintStatus(&out, tree, "")).To(Succeed())
		Expect(lines(out.String())).To(Equal([]string{"ConfigMap shop/loose", "└── (no policy claims it)", "└── (no binding yet)"}))
	})

	It("prints the tree again when a Work changes, with --watch", func(ctx SpecContext) {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		out := &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- host.WatchStatus(wctx, out, fleetview.StatusRequest{Kind: "deploy", Namespace: "shop", Name: "web"}, "")
		}()
		Eventually(out.String).WithContext(ctx).Should(ContainSubstring("member2   Applied=False (AppliedFailed)"))

		setWorkStatus(ctx, works["member2"], metav1.ConditionTrue, wellknown.ReasonAppliedSuccessful, "", workv1alpha1.ResourceHealthy,
			`{"replicas":1,"readyReplicas":1}`)
		Eventually(func() []string { return lines(out.String()) }).WithContext(ctx).Should(
			ContainElement("└── member2 Applied=True Healthy ready 1/1"))

		Eventually(func(g Gomega) {
			env.Get(ctx, g, rb)
			rb.Status.ClustersReady = "2/2"
			meta.SetStatusCondition(&rb.Status.Conditions, metav1.Condition{Type: wellknown.ConditionFullyApplied,
				Status: metav1.ConditionTrue, Reason: wellknown.ReasonFullyApplied})
			g.Expect(env.Host.Status().Update(ctx, rb)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(out.String).WithContext(ctx).Should(ContainSubstring("FullyApplied=True   READY 2/2"))
		cancel()
		Eventually(done).Should(Receive(BeNil()))
	})

	It("prints conditions, version, resources, nodes, taints and the bindings placed on it", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			c := &clusterv1alpha1Cluster{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: "member1"}, c)).To(Succeed())
			c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
			g.Expect(env.Host.Update(ctx, c)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			c := &clusterv1alpha1Cluster{}
			g.Expect(env.Host.Get(ctx, client.ObjectKey{Name: "member1"}, c)).To(Succeed())
			c.Status.KubernetesVersion = "v1.31.0"
			c.Status.NodeSummary = &nodeSummary{TotalNum: 3, ReadyNum: 2}
			c.Status.ResourceSummary = &resourceSummary{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resourceMust("8"), corev1.ResourceMemory: resourceMust("16Gi")},
				Allocated:   corev1.ResourceList{corev1.ResourceCPU: resourceMust("1500m")},
			}
			g.Expect(env.Host.Status().Update(ctx, c)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())

		d, err := host.DescribeCluster(ctx, "member1")
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintClusterDescription(&out, d, time.Now())).To(Succeed())
		GinkgoWriter.Print(out.String())
		ls := lines(out.String())
		Expect(ls).To(ContainElements(
			"Name: member1",
			"Mode: Push",
			"Kubernetes Version: v1.31.0",
			"Conditions:",
			"Nodes: 2/3 ready",
			"RESOURCE ALLOCATABLE ALLOCATED ALLOCATING",
			"cpu 8 1500m 0",
			"memory 16Gi 0 0",
			"Taints:",
			"dedicated=batch:NoSchedule",
			"ResourceBinding shop web-deployment Deployment shop/web 2",
		))
		// The cluster-scoped spec's binding is there too when it ran first.
		Expect(ls).To(ContainElement(MatchRegexp(`^Bindings \([12]\):$`)))
		Expect(ls).To(ContainElement(HavePrefix("Ready True ClusterReady ")))

		_, err = host.DescribeCluster(ctx, "ghost")
		Expect(err).To(MatchError(ContainSubstring(`"ghost" not found`)))
	})
})

var _ = Describe("get", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		for i, m := range env.MemberNames() {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "store"}}
			Expect(env.Members[m].Create(ctx, ns)).To(Succeed())
			dep := fleettest.Deployment("store", "web", int32(i+1))
			dep.Labels = map[string]string{"app": "web"}
			Expect(env.Members[m].Create(ctx, dep)).To(Succeed())
			Expect(env.Members[m].Create(ctx, fleettest.ConfigMap("store", "only-"+m, nil))).To(Succeed())
		}
	})

	It("prints the members' objects side by side, with the kind's own columns", func(ctx SpecContext) {
		res, err := host.Get(ctx, fleetview.GetRequest{Resource: "deploy", Namespace: "store"})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintGet(&out, res, "")).To(Succeed())
		GinkgoWriter.Print(out.String())
		ls := lines(out.String())
		Expect(ls).To(HaveLen(3))
		Expect(ls[0]).To(Equal("CLUSTER NAME READY UP-TO-DATE AVAILABLE AGE"))
		Expect(ls[1]).To(HavePrefix("member1 web 0/1 0 0 "))
		Expect(ls[2]).To(HavePrefix("member2 web 0/2 0 0 "))
		Expect(res.Failed()).To(Equal(0))

		out.Reset()
		Expect(fleetview.PrintGet(&out, res, "wide")).To(Succeed())
		Expect(lines(out.String())[0]).To(Equal("CLUSTER NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR"))
		Expect(lines(out.String())[1]).To(ContainSubstring("app " + fleettest.Image + " app=web"))
	})

	It("reads one name, all namespaces, a selector, and chosen clusters", func(ctx SpecContext) {
		res, err := host.Get(ctx, fleetview.GetRequest{Resource: "configmaps", AllNamespaces: true, Clusters: []string{"member2"}})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintGet(&out, res, "")).To(Succeed())
		ls := lines(out.String())
		Expect(ls[0]).To(Equal("CLUSTER NAMESPACE NAME DATA AGE"))
		Expect(ls).To(ContainElement(HavePrefix("member2 store only-member2 0 ")))
		Expect(out.String()).NotTo(ContainSubstring("member1"))

		res, err = host.Get(ctx, fleetview.GetRequest{Resource: "cm", Namespace: "store", Name: "only-member1"})
		Expect(err).NotTo(HaveOccurred())
		out.Reset()
		Expect(fleetview.PrintGet(&out, res, "")).To(Succeed())
		ls = lines(out.String())
		Expect(ls[1]).To(HavePrefix("member1 only-member1 0 "))
		Expect(ls[2]).To(Equal(`member2 error: configmaps "only-member1" not found`))
		Expect(res.Failed()).To(Equal(1))

		res, err = host.Get(ctx, fleetview.GetRequest{Resource: "deployments.apps", Namespace: "store", Selector: "app=none"})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Empty()).To(BeTrue())

		res, err = host.Get(ctx, fleetview.GetRequest{Resource: "deploy", Namespace: "store", Clusters: []string{"member1", "ghost"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Members).To(HaveLen(2))
		Expect(res.Members[0].Err).To(MatchError(`no Cluster named "ghost" in the host`))
	})

	It("prints the objects with their cluster for -o yaml", func(ctx SpecContext) {
		res, err := host.Get(ctx, fleetview.GetRequest{Resource: "deploy", Namespace: "store", Objects: true})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintGet(&out, res, "yaml")).To(Succeed())
		Expect(out.String()).To(ContainSubstring("kind: List"))
		Expect(out.String()).To(ContainSubstring(fleetview.ClusterAnnotation + ": member1"))
		Expect(out.String()).To(ContainSubstring(fleetview.ClusterAnnotation + ": member2"))
		Expect(strings.Count(out.String(), "kind: Deployment")).To(Equal(2))
	})

	It("shows an error row for a member that does not answer, within the timeout", func(ctx SpecContext) {
		addCluster(ctx, "silent", "https://"+silent.Addr().String())
		addCluster(ctx, "refused", "https://127.0.0.1:1")
		start := time.Now()
		res, err := host.Get(ctx, fleetview.GetRequest{Resource: "deploy", Namespace: "store", MemberTimeout: time.Second})
		took := time.Since(start)
		Expect(err).NotTo(HaveOccurred())
		Expect(took).To(BeNumerically("<", 3*time.Second))
		var out bytes.Buffer
		Expect(fleetview.PrintGet(&out, res, "")).To(Succeed())
		GinkgoWriter.Printf("get in %s:\n%s", took, out.String())
		ls := lines(out.String())
		Expect(ls).To(HaveLen(5))
		Expect(ls[1]).To(HavePrefix("member1 web 0/1"))
		Expect(ls[2]).To(HavePrefix("member2 web 0/2"))
		Expect(ls[3]).To(HavePrefix("refused error: "))
		Expect(ls[3]).To(ContainSubstring("connection refused"))
		Expect(ls[4]).To(Equal("silent error: no answer within 1s"))
		Expect(res.Failed()).To(Equal(2))
	})

	It("leaves out clusters that are not Ready by default", func(ctx SpecContext) {
		setReady(ctx, "member2", metav1.ConditionFalse)
		DeferCleanup(func(ctx SpecContext) { setReady(ctx, "member2", metav1.ConditionTrue) })
		res, err := host.Get(ctx, fleetview.GetRequest{Resource: "deploy", Namespace: "store"})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Members).To(HaveLen(1))
		Expect(res.Members[0].Cluster).To(Equal("member1"))
	})
})

var _ = Describe("status of a cluster-scoped template", func() {
	It("follows the ClusterPropagationPolicy and the ClusterResourceBinding, ignoring -n", func(ctx SpecContext) {
		cr := &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}},
		}
		Expect(env.Host.Create(ctx, cr)).To(Succeed())
		cr.TypeMeta = metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}
		crb := env.Binding(cr, 0, fleettest.Scheduled("member1", 0)...)
		crb.SetAnnotations(map[string]string{wellknown.ClusterPropagationPolicyNameAnnotation: "readers"})
		Expect(env.Host.Create(ctx, crb)).To(Succeed())
		w := fleettest.Work("member1", cr)
		w.Finalizers = nil
		fleettest.BindWork(w, crb)
		Expect(env.Host.Create(ctx, w)).To(Succeed())

		tree, err := host.Status(ctx, fleetview.StatusRequest{Kind: "clusterroles", Namespace: "shop", Name: "reader"})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		Expect(fleetview.PrintStatus(&out, tree, "")).To(Succeed())
		Expect(lines(out.String())).To(Equal([]string{
			"ClusterRole reader",
			"└── ClusterPropagationPolicy readers",
			"└── ClusterResourceBinding reader-clusterrole Scheduled=Unknown FullyApplied=Unknown READY -",
			"└── member1 Applied=Unknown - ready -",
		}))

		d, err := host.DescribeCluster(ctx, "member1")
		Expect(err).NotTo(HaveOccurred())
		out.Reset()
		Expect(fleetview.PrintClusterDescription(&out, d, time.Now())).To(Succeed())
		Expect(lines(out.String())).To(ContainElement("ClusterResourceBinding - reader-clusterrole ClusterRole reader -"))
	})
})
