package cluster_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

var _ = Describe("Member clusters", Ordered, func() {
	var m1, m2, m3 *localcluster.Cluster
	// versions records every version of the Clusters the host stores, from before the joins.
	versions := &clusterVersions{}

	BeforeAll(func(ctx SpecContext) {
		m1, m2, m3 = fleet.Members[0], fleet.Members[1], fleet.Members[2]
		versions.watch()
		for i, m := range fleet.Members[:3] {
			o := fleet.MemberOptions[i]
			res, err := join.Join(ctx, join.Options{
				Name: m.Name, Host: fleet.Host.RESTConfig(), Member: m.RESTConfig(),
				Provider: o.Provider, Region: o.Region, Zone: o.Zone,
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Rejoined).To(BeFalse())
		}
	})

	It("makes every joined member Ready, with its identity, version and APIs", func(ctx SpecContext) {
		for i, m := range fleet.Members[:3] {
			version, err := kube(m).Discovery().ServerVersion()
			Expect(err).NotTo(HaveOccurred())
			kubeSystem, err := kube(m).CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())

			Eventually(func(g Gomega) {
				c := getCluster(ctx, g, m.Name)
				g.Expect(ready(c)).To(HaveField("Status", metav1.ConditionTrue))
				g.Expect(ready(c).ObservedGeneration).To(Equal(c.Generation))
				g.Expect(c.Status.KubernetesVersion).To(Equal(version.GitVersion))
				g.Expect(c.Status.APIEnablements).To(ContainElement(clusterv1alpha1.APIEnablement{
					GroupVersion: "apps/v1",
					Resources: []clusterv1alpha1.APIResource{
						{Name: "controllerrevisions", Kind: "ControllerRevision"}, {Name: "daemonsets", Kind: "DaemonSet"},
						{Name: "deployments", Kind: "Deployment"}, {Name: "replicasets", Kind: "ReplicaSet"},
						{Name: "statefulsets", Kind: "StatefulSet"},
					},
				}))
				g.Expect(c.Status.NodeSummary).To(Equal(&clusterv1alpha1.NodeSummary{}))
				g.Expect(c.Spec.Taints).To(BeEmpty())
			}).Should(Succeed())

			c := getCluster(ctx, Default, m.Name)
			Expect(c.Finalizers).To(ContainElement(wellknown.ClusterControllerFinalizer))
			Expect(c.Spec.ID).To(Equal(string(kubeSystem.UID)))
			Expect(c.Spec.SyncMode).To(Equal(clusterv1alpha1.Push))
			Expect(c.Spec.APIEndpoint).To(Equal(m.Endpoint))
			Expect(c.Spec.Provider).To(Equal(fleet.MemberOptions[i].Provider))
			Expect(c.Spec.Zones).To(Equal([]string{fleet.MemberOptions[i].Zone}))
			Expect(hostClient.Get(ctx, client.ObjectKey{Name: wellknown.ExecutionNamespace(m.Name)}, &corev1.Namespace{})).To(Succeed())

			secret := &corev1.Secret{}
			Expect(hostClient.Get(ctx, client.ObjectKey{Namespace: wellknown.SystemNamespace, Name: m.Name}, secret)).To(Succeed())
			Expect(secret.Data).To(HaveKeyWithValue(wellknown.SecretKeyCABundle, m.CAData))
			Expect(secret.Data).To(HaveKey(wellknown.SecretKeyToken))
		}
	})

	It("reports a member Ready only together with the APIs it serves", func() {
		// A Cluster Ready without its APIs would be left out of every placement made then
		// (a placement once made stays): the first Ready carries them.
		readyOf := func(name string) []*clusterv1alpha1.Cluster {
			var out []*clusterv1alpha1.Cluster
			for _, c := range versions.all() {
				if c.Name == name && ready(c) != nil && ready(c).Status == metav1.ConditionTrue {
					out = append(out, c)
				}
			}
			return out
		}
		for _, m := range fleet.Members[:3] {
			Eventually(func() []*clusterv1alpha1.Cluster { return readyOf(m.Name) }).ShouldNot(BeEmpty())
			for _, c := range readyOf(m.Name) {
				Expect(c.Status.APIEnablements).NotTo(BeEmpty(),
					"Cluster %s was Ready at resourceVersion %s without its APIs", c.Name, c.ResourceVersion)
			}
		}
	})

	It("grants the control plane only the rights it needs in the member", func(ctx SpecContext) {
		role, err := kube(m1).RbacV1().ClusterRoles().Get(ctx, wellknown.MemberAccessName(m1.Name), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		groups, err := join.ServedGroups(ctx, kube(m1).Discovery())
		Expect(err).NotTo(HaveOccurred())
		Expect(role.Rules).To(Equal(join.MemberRules(role.Name, groups, false)))
		binding, err := kube(m1).RbacV1().ClusterRoleBindings().Get(ctx, wellknown.MemberAccessName(m1.Name), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(binding.RoleRef.Name).To(Equal(role.Name))

		// What the token in the host Secret may do in the member, asked of the member.
		token := secretToken(ctx, m1.Name)
		asControlPlane := kube(m1, func(cfg *rest.Config) { cfg.BearerToken = token })
		review, err := asControlPlane.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, selfRulesReview(), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		var verbs []string
		for _, r := range review.Status.ResourceRules {
			if slices.Contains(r.Verbs, "escalate") {
				// On its own ClusterRole alone, to add API groups served since (its guard
				// checks what it adds).
				Expect(r.ResourceNames).To(Equal([]string{role.Name}), "escalate on %v", r)
				Expect(r.Resources).To(Equal([]string{"clusterroles"}), "escalate on %v", r)
				continue
			}
			verbs = append(verbs, r.Verbs...)
		}
		Expect(verbs).To(ContainElements("create", "patch", "delete", "watch"))
		Expect(verbs).NotTo(ContainElement(BeElementOf("escalate", "bind", "impersonate", "*")))
	})

	It("sums the member's nodes and pod requests, page by page", func(ctx SpecContext) {
		cs := kube(m1)
		createNode(ctx, cs, "n1", true, resources("cpu", "4", "memory", "8Gi", "pods", "110"))
		createNode(ctx, cs, "n2", true, resources("cpu", "8", "memory", "16Gi", "pods", "110"))
		createNode(ctx, cs, "n3", false, resources("cpu", "2", "memory", "4Gi", "pods", "110"))
		createNamespace(ctx, cs, "workloads")
		createPod(ctx, cs, "a", "n1", resources("cpu", "500m", "memory", "1Gi"))
		createPod(ctx, cs, "b", "n2", resources("cpu", "1500m", "memory", "2Gi"))
		createPod(ctx, cs, "pending", "", resources("cpu", "2", "memory", "3Gi"))
		done := createPod(ctx, cs, "done", "n1", resources("cpu", "4"))
		done.Status.Phase = corev1.PodSucceeded
		_, err := cs.CoreV1().Pods(done.Namespace).UpdateStatus(ctx, done, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())

		Eventually(func(g Gomega) {
			c := getCluster(ctx, g, m1.Name)
			g.Expect(c.Status.NodeSummary).To(Equal(&clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 2}))
			rs := c.Status.ResourceSummary
			g.Expect(rs).NotTo(BeNil())
			g.Expect(rs.Allocatable).To(equalResources(resources("cpu", "14", "memory", "28Gi", "pods", "330")))
			g.Expect(rs.Allocated).To(equalResources(resources("cpu", "2", "memory", "3Gi", "pods", "2")))
			g.Expect(rs.Allocating).To(equalResources(resources("cpu", "2", "memory", "3Gi", "pods", "1")))
			g.Expect(rs.AllocatableModelings).To(BeEmpty())
		}).Within(statusInterval + 10*time.Second).Should(Succeed())
	})

	It("grades the member's nodes by the Cluster's resource models, at once when they change", func(ctx SpecContext) {
		rng := func(name, min, max string) clusterv1alpha1.ResourceModelRange {
			return clusterv1alpha1.ResourceModelRange{Name: corev1.ResourceName(name), Min: resource.MustParse(min), Max: resource.MustParse(max)}
		}
		c := getCluster(ctx, Default, m1.Name)
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.ResourceModels = []clusterv1alpha1.ResourceModel{
			{Grade: 0, Ranges: []clusterv1alpha1.ResourceModelRange{rng("cpu", "0", "4"), rng("memory", "0", "8Gi")}},
			{Grade: 1, Ranges: []clusterv1alpha1.ResourceModelRange{rng("cpu", "4", "8"), rng("memory", "8Gi", "16Gi")}},
			{Grade: 2, Ranges: []clusterv1alpha1.ResourceModelRange{rng("cpu", "8", "1k"), rng("memory", "16Gi", "1Pi")}},
		}
		Expect(hostClient.Patch(ctx, c, patch)).To(Succeed())

		// Free: n1 3.5 CPU 7Gi (grade 0), n2 6.5 CPU 14Gi (grade 1), n3 2 CPU 4Gi (grade 0).
		Eventually(func(g Gomega) {
			rs := getCluster(ctx, g, m1.Name).Status.ResourceSummary
			g.Expect(rs).NotTo(BeNil())
			g.Expect(rs.AllocatableModelings).To(Equal([]clusterv1alpha1.AllocatableModeling{
				{Grade: 0, Count: 2}, {Grade: 1, Count: 1}, {Grade: 2, Count: 0},
			}))
		}).Within(5 * time.Second).Should(Succeed())
	})

	It("reports a member whose apiserver stopped, taints it, and recovers when it is back", func(ctx SpecContext) {
		Expect(m2.StopAPIServer()).To(Succeed())
		stopped := time.Now()
		Eventually(func(g Gomega) {
			c := getCluster(ctx, g, m2.Name)
			g.Expect(ready(c)).To(HaveField("Status", metav1.ConditionUnknown))
			g.Expect(ready(c).Reason).To(Equal(wellknown.ClusterReasonNotReachable))
			g.Expect(taintKeys(c)).To(ConsistOf(wellknown.TaintClusterUnreachable))
			g.Expect(c.Spec.Taints[0].TimeAdded).NotTo(BeNil())
		}).Within(notReadyWithin).Should(Succeed())
		detected := time.Since(stopped)
		AddReportEntry("apiserver stopped → Ready=Unknown and tainted", detected.Round(10*time.Millisecond).String())
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, m2.Name)).To(ContainElement(wellknown.EventReasonClusterNotReady))
		}).Should(Succeed())

		Expect(m2.StartAPIServer(ctx)).To(Succeed())
		started := time.Now()
		Eventually(func(g Gomega) {
			c := getCluster(ctx, g, m2.Name)
			g.Expect(ready(c)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(c.Spec.Taints).To(BeEmpty())
		}).Within(readyWithin).Should(Succeed())
		AddReportEntry("apiserver back → Ready=True and untainted", time.Since(started).Round(10*time.Millisecond).String())
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(ctx, g, m2.Name)).To(ContainElement(wellknown.EventReasonClusterReady))
		}).Should(Succeed())
	})

	It("reconnects as soon as the member's token changes: a bad one, then one rotated by join", func(ctx SpecContext) {
		key := client.ObjectKey{Namespace: wellknown.SystemNamespace, Name: m3.Name}
		secret := &corev1.Secret{}
		Expect(hostClient.Get(ctx, key, secret)).To(Succeed())
		good := string(secret.Data[wellknown.SecretKeyToken])
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Data[wellknown.SecretKeyToken] = []byte("not-a-token")
		Expect(hostClient.Patch(ctx, secret, patch)).To(Succeed())

		broken := time.Now()
		Eventually(func(g Gomega) {
			c := getCluster(ctx, g, m3.Name)
			g.Expect(ready(c)).To(HaveField("Status", metav1.ConditionFalse))
			g.Expect(ready(c).Reason).To(Equal(wellknown.ClusterReasonNotReady))
			g.Expect(ready(c).Message).To(And(ContainSubstring("401"), ContainSubstring("kubectl flotilla join")))
			g.Expect(taintKeys(c)).To(ConsistOf(wellknown.TaintClusterNotReady))
		}).Within(notReadyWithin).Should(Succeed())
		AddReportEntry("token replaced by a bad one → Ready=False", time.Since(broken).Round(10*time.Millisecond).String())

		res, err := join.Join(ctx, join.Options{Name: m3.Name, Host: fleet.Host.RESTConfig(), Member: m3.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Rejoined).To(BeTrue())
		Expect(res.TokenExpires).To(BeTemporally("~", time.Now().Add(join.DefaultTokenExpiration), time.Hour))
		Expect(secretToken(ctx, m3.Name)).NotTo(Or(Equal(good), Equal("not-a-token")))
		rotated := time.Now()
		Eventually(func(g Gomega) {
			c := getCluster(ctx, g, m3.Name)
			g.Expect(ready(c)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(c.Spec.Taints).To(BeEmpty())
		}).Within(readyWithin).Should(Succeed())
		AddReportEntry("token rotated by join → Ready=True", time.Since(rotated).Round(10*time.Millisecond).String())
	})

	It("refuses to join a member twice, or under another member's name", func(ctx SpecContext) {
		_, err := join.Join(ctx, join.Options{Name: "member1-again", Host: fleet.Host.RESTConfig(), Member: m1.RESTConfig()})
		Expect(err).To(MatchError(join.ErrAlreadyJoined))
		Expect(err.Error()).To(ContainSubstring(`already joined as Cluster "member1"`))
		_, err = join.Join(ctx, join.Options{Name: m1.Name, Host: fleet.Host.RESTConfig(), Member: m2.RESTConfig()})
		Expect(err).To(MatchError(join.ErrNameTaken))

		Expect(apierrors.IsNotFound(hostClient.Get(ctx, client.ObjectKey{Name: "member1-again"}, &clusterv1alpha1.Cluster{}))).To(BeTrue())
		_, err = kube(m1).CoreV1().ServiceAccounts(wellknown.SystemNamespace).Get(ctx, wellknown.MemberAccessName("member1-again"), metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a refused join must leave nothing in the member")
		Expect(getCluster(ctx, Default, m1.Name).Spec.APIEndpoint).To(Equal(m1.Endpoint))
	})

	It("says what is wrong when a cluster cannot be reached, rejects the credentials, or is no host", func(ctx SpecContext) {
		unreachable := rest.CopyConfig(m1.RESTConfig())
		unreachable.Host = "https://127.0.0.1:" + strconv.Itoa(closedPort())
		_, err := join.Join(ctx, join.Options{Name: "nowhere", Host: fleet.Host.RESTConfig(), Member: unreachable})
		Expect(err).To(MatchError(join.ErrUnreachable))
		Expect(err.Error()).To(ContainSubstring("cannot reach the member apiserver"))

		badToken := rest.CopyConfig(m1.RESTConfig())
		badToken.BearerToken = "not-a-token"
		_, err = join.Join(ctx, join.Options{Name: "rejected", Host: fleet.Host.RESTConfig(), Member: badToken})
		Expect(err).To(MatchError(join.ErrUnauthorized))
		Expect(err.Error()).To(ContainSubstring("--cluster-kubeconfig (401 Unauthorized)"))

		_, err = join.Join(ctx, join.Options{Name: "no-host", Host: m2.RESTConfig(), Member: m1.RESTConfig()})
		Expect(err).To(MatchError(join.ErrNotInstalled))
	})

	It("unjoins a member without its kubeconfig, and lists what is left there", func(ctx SpecContext) {
		res, err := join.Unjoin(ctx, join.UnjoinOptions{Name: m2.Name, Host: fleet.Host.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Removed).To(ConsistOf("Cluster member2 (host)", "Secret flotilla-system/member2 (host)"))
		Expect(res.NotRemoved).To(ConsistOf("ClusterRoleBinding flotilla-member2", "ClusterRole flotilla-member2",
			"ServiceAccount flotilla-system/flotilla-member2", "ValidatingAdmissionPolicyBinding flotilla-member2-guard",
			"ValidatingAdmissionPolicy flotilla-member2-guard"))
		_, err = kube(m2).CoreV1().ServiceAccounts(wellknown.SystemNamespace).Get(ctx, wellknown.MemberAccessName(m2.Name), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("unjoins a member: its Works, execution namespace, host Secret and member ServiceAccount go", func(ctx SpecContext) {
		ns := wellknown.ExecutionNamespace(m3.Name)
		// What the execution and mcs controllers register: their member queues go with the Cluster.
		var removedMu sync.Mutex
		var removed []string
		members.OnRemove(func(name string) {
			removedMu.Lock()
			defer removedMu.Unlock()
			removed = append(removed, name)
		})
		work := &workv1alpha1.Work{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{
				RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"default"}}`)},
			}}}},
		}
		Expect(hostClient.Create(ctx, work)).To(Succeed())

		res, err := join.Unjoin(ctx, join.UnjoinOptions{Name: m3.Name, Host: fleet.Host.RESTConfig(), Member: m3.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.NotRemoved).To(BeEmpty())
		Expect(res.Removed).To(ContainElements("Cluster member3 (host)", "Secret flotilla-system/member3 (host)",
			"ServiceAccount flotilla-system/flotilla-member3 (member)", "ValidatingAdmissionPolicy flotilla-member3-guard (member)"))

		Expect(apierrors.IsNotFound(hostClient.Get(ctx, client.ObjectKeyFromObject(work), &workv1alpha1.Work{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(hostClient.Get(ctx, client.ObjectKey{Namespace: wellknown.SystemNamespace, Name: m3.Name}, &corev1.Secret{}))).To(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(hostClient.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
		}).Should(BeTrue(), "the execution namespace is deleted")
		for _, obj := range []client.Object{
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.SystemNamespace, Name: wellknown.MemberAccessName(m3.Name)}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: wellknown.MemberAccessName(m3.Name)}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: wellknown.MemberAccessName(m3.Name)}},
		} {
			Expect(apierrors.IsNotFound(memberClient(m3).Get(ctx, client.ObjectKeyFromObject(obj), obj))).To(BeTrue(), "%T is gone", obj)
		}
		Expect(members.Names()).NotTo(ContainElement(m3.Name), "the connection is dropped")
		removedMu.Lock()
		Expect(removed).To(ContainElement(m3.Name), "the member's per-member state is let go of")
		removedMu.Unlock()

		// Unjoining again finds nothing to do.
		res, err = join.Unjoin(ctx, join.UnjoinOptions{Name: m3.Name, Host: fleet.Host.RESTConfig(), Member: m3.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Removed).To(BeEmpty())
	})
})

// clusterVersions is every version of the Clusters a watch of the host delivered.
type clusterVersions struct {
	mu   sync.Mutex
	seen []*clusterv1alpha1.Cluster
}

// watch records the Clusters' versions until the specs around it end (not the node that
// starts it: a BeforeAll's context ends with it).
func (v *clusterVersions) watch() {
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	c, err := client.NewWithWatch(fleet.Host.RESTConfig(), client.Options{Scheme: hostClient.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := c.Watch(ctx, &clusterv1alpha1.ClusterList{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	go func() {
		defer GinkgoRecover()
		for ev := range w.ResultChan() {
			if c, ok := ev.Object.(*clusterv1alpha1.Cluster); ok {
				v.mu.Lock()
				v.seen = append(v.seen, c)
				v.mu.Unlock()
			}
		}
	}()
}

func (v *clusterVersions) all() []*clusterv1alpha1.Cluster {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]*clusterv1alpha1.Cluster(nil), v.seen...)
}

func getCluster(ctx context.Context, g Gomega, name string) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{}
	g.Expect(hostClient.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
	return c
}

func ready(c *clusterv1alpha1.Cluster) *metav1.Condition {
	if cond := meta.FindStatusCondition(c.Status.Conditions, wellknown.ClusterConditionReady); cond != nil {
		return cond
	}
	return &metav1.Condition{}
}

func taintKeys(c *clusterv1alpha1.Cluster) []string {
	var keys []string
	for _, t := range c.Spec.Taints {
		Expect(t.Effect).To(Equal(corev1.TaintEffectNoSchedule))
		keys = append(keys, t.Key)
	}
	return keys
}

func secretToken(ctx context.Context, cluster string) string {
	secret := &corev1.Secret{}
	Expect(hostClient.Get(ctx, client.ObjectKey{Namespace: wellknown.SystemNamespace, Name: cluster}, secret)).To(Succeed())
	return string(secret.Data[wellknown.SecretKeyToken])
}

// eventReasons lists the reasons of the events recorded on a Cluster.
func eventReasons(ctx context.Context, g Gomega, cluster string) []string {
	events := &eventsv1.EventList{}
	g.Expect(hostClient.List(ctx, events)).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "Cluster" && e.Regarding.Name == cluster {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func kube(m *localcluster.Cluster, mutate ...func(*rest.Config)) kubernetes.Interface {
	cfg := m.RESTConfig()
	for _, f := range mutate {
		f(cfg)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return cs
}

func memberClient(m *localcluster.Cluster) client.Client {
	cl, err := client.New(m.RESTConfig(), client.Options{})
	Expect(err).NotTo(HaveOccurred())
	return cl
}

func resources(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// equalResources compares resource lists by quantity, not by how quantities are written.
func equalResources(want corev1.ResourceList) OmegaMatcher {
	return WithTransform(func(got corev1.ResourceList) bool { return equality.Semantic.DeepEqual(got, want) },
		BeTrue())
}

// createNode creates a Node of an apiserver-only member, with its status set as a kubelet
// would.
func createNode(ctx context.Context, cs kubernetes.Interface, name string, isReady bool, allocatable corev1.ResourceList) {
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	status := corev1.ConditionFalse
	if isReady {
		status = corev1.ConditionTrue
	}
	n.Status = corev1.NodeStatus{Capacity: allocatable, Allocatable: allocatable,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.Now()}}}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// createNamespace creates a namespace and its default ServiceAccount, which admission wants
// for Pods and which no controller makes in an apiserver-only member.
func createNamespace(ctx context.Context, cs kubernetes.Interface, name string) {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// createPod creates a Pod in namespace workloads, bound to nodeName unless it is empty.
func createPod(ctx context.Context, cs kubernetes.Interface, name, nodeName string, requests corev1.ResourceList) *corev1.Pod {
	p, err := cs.CoreV1().Pods("workloads").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                     nodeName,
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: requests}}},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return p
}

func selfRulesReview() *authorizationv1.SelfSubjectRulesReview {
	return &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}
}

// closedPort returns a loopback port nothing listens on.
func closedPort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	Expect(l.Close()).To(Succeed())
	return port
}

var _ = Describe("A member that runs workloads", func() {
	It("reports its real Nodes, and the requests of the Pods its scheduler placed or could not place", func(ctx SpecContext) {
		m := fleet.Member(fullMember)
		_, err := join.Join(ctx, join.Options{Name: m.Name, Host: fleet.Host.RESTConfig(), Member: m.RESTConfig()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_, err := join.Unjoin(ctx, join.UnjoinOptions{Name: m.Name, Host: fleet.Host.RESTConfig(), Member: m.RESTConfig()})
			Expect(err).NotTo(HaveOccurred())
		})

		// Two kwok Nodes of localcluster.DefaultNodeCapacity: 8 CPUs, 32Gi, 110 Pods each.
		Eventually(func(g Gomega) {
			c := getCluster(ctx, g, m.Name)
			g.Expect(ready(c)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(c.Status.NodeSummary).To(Equal(&clusterv1alpha1.NodeSummary{TotalNum: 2, ReadyNum: 2}))
			g.Expect(c.Status.ResourceSummary).NotTo(BeNil())
			g.Expect(c.Status.ResourceSummary.Allocatable).To(equalResources(resources("cpu", "16", "memory", "64Gi", "pods", "220")))
		}).Should(Succeed())

		cs := kube(m)
		deploy := func(name string, replicas int32, requests corev1.ResourceList) {
			labels := map[string]string{"app": name}
			_, err := cs.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To(replicas),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
							Resources: corev1.ResourceRequirements{Requests: requests}}}},
					},
				},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		deploy("web", 3, resources("cpu", "1", "memory", "1Gi"))
		deploy("too-big", 1, resources("cpu", "100"))

		Eventually(func(g Gomega) {
			rs := getCluster(ctx, g, m.Name).Status.ResourceSummary
			g.Expect(rs.Allocated).To(equalResources(resources("cpu", "3", "memory", "3Gi", "pods", "3")))
			g.Expect(rs.Allocating).To(equalResources(resources("cpu", "100", "pods", "1")))
			// Node by node: the three 1-CPU pods on the two nodes, in one group or two.
			var nodes int32
			var freeCPU int64
			for _, ng := range rs.NodeGroups {
				nodes += ng.Count
				freeCPU += ng.Free.Cpu().MilliValue() * int64(ng.Count)
			}
			g.Expect(nodes).To(BeEquivalentTo(2))
			g.Expect(freeCPU).To(BeEquivalentTo(13000))
		}).Within(time.Minute).Should(Succeed())
	})
})
