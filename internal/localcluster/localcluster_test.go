package localcluster_test

import (
	"errors"
	"net"
	"net/url"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/localcluster"
)

var widgets = schema.GroupVersionResource{Group: "test.flotilla.io", Version: "v1", Resource: "widgets"}

var _ = Describe("A fleet of API servers", Ordered, func() {
	var fleet *localcluster.Fleet

	BeforeAll(func(ctx SpecContext) {
		began := time.Now()
		// The apiservers are started with --profiling=false; the variable's flags come last.
		GinkgoT().Setenv(localcluster.APIServerArgsEnv, "--profiling=true")
		var err error
		fleet, err = localcluster.StartFleet(ctx, localcluster.FleetOptions{
			CRDDir:  "testdata/crds",
			Members: localcluster.DefaultMembers(2, false),
			Log:     GinkgoWriter,
		})
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("fleet of host + 2 API-server-only members started in", time.Since(began).Round(time.Millisecond))
		DeferCleanup(func() error { return fleet.Stop() })
	}, NodeTimeout(3*time.Minute))

	It("adds the flags of FLOTILLA_APISERVER_ARGS to every apiserver", func(ctx SpecContext) {
		for _, c := range fleet.Clusters() {
			cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
			body, err := cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/").DoRaw(ctx)
			Expect(err).NotTo(HaveOccurred(), "%s serves no profiles", c.Name)
			Expect(string(body)).To(ContainSubstring("heap"))
		}
	})

	It("serves every cluster on its own loopback endpoint, through its kubeconfig too", func(ctx SpecContext) {
		Expect(fleet.Members).To(HaveLen(2))
		Expect(fleet.Member("member2")).To(BeIdenticalTo(fleet.Members[1]))
		Expect(fleet.Member("nope")).To(BeNil())

		seen := map[string]bool{}
		for _, c := range fleet.Clusters() {
			u, err := url.Parse(c.Endpoint)
			Expect(err).NotTo(HaveOccurred())
			Expect(u.Hostname()).To(Equal("127.0.0.1"))
			Expect(seen).NotTo(HaveKey(u.Host), "two clusters share an endpoint")
			seen[u.Host] = true

			for _, path := range []string{c.KubeconfigPath, fleet.KubeconfigPath(c.Name)} {
				cfg, err := clientcmd.BuildConfigFromFlags("", path)
				Expect(err).NotTo(HaveOccurred())
				cs := kubernetes.NewForConfigOrDie(cfg)
				_, err = cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred(), "cluster %s via %s", c.Name, path)
			}
		}
	})

	It("installs the CRDs into the host only", func(ctx SpecContext) {
		widget := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.flotilla.io/v1",
			"kind":       "Widget",
			"metadata":   map[string]any{"name": "w"},
			"spec":       map[string]any{"size": int64(3)},
		}}
		host := dynamic.NewForConfigOrDie(fleet.Host.RESTConfig())
		_, err := host.Resource(widgets).Namespace("default").Create(ctx, widget, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		invalid := widget.DeepCopy()
		invalid.SetName("invalid")
		Expect(unstructured.SetNestedField(invalid.Object, int64(0), "spec", "size")).To(Succeed())
		_, err = host.Resource(widgets).Namespace("default").Create(ctx, invalid, metav1.CreateOptions{})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the schema is enforced, got %v", err)

		member := dynamic.NewForConfigOrDie(fleet.Members[0].RESTConfig())
		_, err = member.Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
	})

	It("restarts a member's API server on the same port, with its data", func(ctx SpecContext) {
		m := fleet.Member("member1")
		endpoint := m.Endpoint
		cs := kubernetes.NewForConfigOrDie(m.RESTConfig()) // built before the restart, used after
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "survivor", Namespace: "default"},
			Data:       map[string]string{"k": "v"},
		}
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		Expect(m.StopAPIServer()).To(Succeed())
		_, err = net.DialTimeout("tcp", hostPort(endpoint), time.Second)
		Expect(err).To(HaveOccurred(), "nothing listens while the API server is stopped")
		Expect(m.Healthy(ctx)).NotTo(Succeed())

		began := time.Now()
		Expect(m.StartAPIServer(ctx)).To(Succeed())
		AddReportEntry("API server restarted in", time.Since(began).Round(time.Millisecond))
		Expect(m.Endpoint).To(Equal(endpoint))
		Expect(m.Healthy(ctx)).To(Succeed())

		got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Data).To(Equal(cm.Data))
	})

	It("records a state file another process can attach to", func(ctx SpecContext) {
		loaded, err := localcluster.LoadFleet(fleet.Dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(loaded.Healthy(ctx)).To(Succeed())
		Expect(loaded.Host.Endpoint).To(Equal(fleet.Host.Endpoint))
		Expect(loaded.Member("member2").Processes()).To(Equal(fleet.Member("member2").Processes()))
		Expect(loaded.MemberOptions[1].Provider).To(Equal(fleet.MemberOptions[1].Provider))
		Expect(loaded.Member("member2").AdminToken).To(Equal(fleet.Member("member2").AdminToken))
	})

	It("leaves no process and no directory behind when stopped", func() {
		var pids []int
		for _, c := range fleet.Clusters() {
			procs := c.Processes()
			Expect(procs).To(HaveLen(2), "etcd and kube-apiserver of %s", c.Name)
			for _, p := range procs {
				pids = append(pids, p.PID)
			}
		}
		Expect(fleet.Stop()).To(Succeed())
		for _, pid := range pids {
			Expect(processExists(pid)).To(BeFalse(), "pid %d", pid)
		}
		Expect(fleet.Dir).NotTo(BeADirectory())
		Expect(fleet.Stop()).To(Succeed(), "Stop is idempotent")
	})
})

var _ = Describe("A full cluster", Ordered, func() {
	var c *localcluster.Cluster

	BeforeAll(func(ctx SpecContext) {
		began := time.Now()
		var err error
		c, err = localcluster.Start(ctx, localcluster.Options{Name: "full", Full: true, Log: GinkgoWriter})
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("full cluster started in", time.Since(began).Round(time.Millisecond))
		DeferCleanup(func() error { return c.Stop() })
	}, NodeTimeout(3*time.Minute))

	It("has Ready fake nodes with the default capacity", func(ctx SpecContext) {
		nodes, err := kubernetes.NewForConfigOrDie(c.RESTConfig()).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes.Items).To(HaveLen(2))
		for _, n := range nodes.Items {
			Expect(n.Status.Allocatable.Cpu().String()).To(Equal("8"))
			Expect(n.Annotations).To(HaveKeyWithValue(localcluster.KwokNodeAnnotation, "fake"))
		}
	})

	It("runs a Deployment to 2 ready replicas", func(ctx SpecContext) {
		cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
		labels := map[string]string{"app": "web"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name:  "web",
						Image: "registry.k8s.io/pause:3.10",
					}}},
				},
			},
		}
		_, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		began := time.Now()
		Eventually(ctx, func(g Gomega) {
			got, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(2))
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		AddReportEntry("Deployment ready in", time.Since(began).Round(time.Millisecond))
	})

	It("leaves no process behind when stopped", func() {
		procs := c.Processes()
		Expect(procs).To(HaveLen(5))
		dir := c.Dir
		Expect(c.Stop()).To(Succeed())
		for _, p := range procs {
			Expect(processExists(p.PID)).To(BeFalse(), "%s (pid %d)", p.Name, p.PID)
		}
		Expect(dir).NotTo(BeADirectory())
	})
})

func hostPort(endpoint string) string {
	u, err := url.Parse(endpoint)
	Expect(err).NotTo(HaveOccurred())
	return u.Host
}

// processExists reports whether pid names a process, zombies included.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
