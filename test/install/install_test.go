package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/deploy"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

var (
	env     *framework.Env
	manager *managerProcess
	// installed is what dist/install.yaml holds.
	installed []*unstructured.Unstructured
	members   = []string{"member1", "member2", "member3"}
)

var _ = BeforeSuite(func(ctx context.Context) {
	root := framework.RepoRoot()
	tmp := GinkgoT().TempDir()

	// Build the manager while the fleet starts.
	bin := filepath.Join(tmp, "manager")
	built := make(chan error, 1)
	go func() { built <- buildManager(ctx, bin) }()

	data, err := deploy.Installer(root, "")
	Expect(err).NotTo(HaveOccurred())
	installed, err = deploy.DecodeObjects(data)
	Expect(err).NotTo(HaveOccurred())

	// The host has its own kube-controller-manager (it issues nothing we need, but a real host
	// runs one); the members are apiservers only. No CRDs are pre-installed: install.yaml
	// brings them.
	fleet, err := localcluster.StartFleet(ctx, localcluster.FleetOptions{
		Host:    localcluster.Options{ControllerManager: true},
		Members: localcluster.DefaultMembers(len(members), false),
		Log:     GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(fleet.Stop)
	env = &framework.Env{Fleet: fleet, Members: map[string]client.Client{}}
	s := flotillascheme.New()
	Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	env.Host, err = client.New(fleet.Host.RESTConfig(), client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	for _, m := range fleet.Members {
		env.Members[m.Name], err = client.New(m.RESTConfig(), client.Options{Scheme: s})
		Expect(err).NotTo(HaveOccurred())
	}

	By("applying install.yaml without the manager Deployment, which has no image to run here")
	for _, obj := range installed {
		if obj.GetKind() == "Deployment" {
			continue
		}
		Expect(env.Host.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
			client.FieldOwner("kubectl"), client.ForceOwnership)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	}
	for _, crd := range deploy.OfKind(installed, "CustomResourceDefinition") {
		Eventually(func(g Gomega) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Name: crd.GetName()}, got)).To(Succeed())
			established := false
			for _, c := range got.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			g.Expect(established).To(BeTrue(), "CRD %s is not established", crd.GetName())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	}

	By("running the manager as the installed ServiceAccount, out of cluster")
	d, err := deploy.ManagerDeploymentOf(installed)
	Expect(err).NotTo(HaveOccurred())
	sa, _, _ := unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
	kube, err := kubernetes.NewForConfig(fleet.Host.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
	tr, err := kube.CoreV1().ServiceAccounts(d.GetNamespace()).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := filepath.Join(tmp, "manager.kubeconfig")
	Expect(os.WriteFile(kubeconfig, fleet.Host.Kubeconfig(sa, tr.Status.Token), 0o600)).To(Succeed())

	Expect(<-built).To(Succeed())
	port, err := freePort()
	Expect(err).NotTo(HaveOccurred())
	probeAddr := "127.0.0.1:" + strconv.Itoa(port)
	// The Deployment's flags, with loopback addresses, plus a short member probe interval.
	manager, err = startManager(bin, kubeconfig, filepath.Join(tmp, "manager.log"),
		"--leader-elect",
		"--metrics-bind-address=127.0.0.1:0",
		"--health-probe-bind-address="+probeAddr,
		"--cluster-probe-interval=1s",
	)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		if err := manager.stop(); err != nil {
			GinkgoWriter.Printf("manager stopped with %v\n", err)
		}
	})
	Expect(manager.waitReady(ctx, probeAddr)).To(Succeed())

	By("registering the members as join does")
	for _, m := range members {
		Expect(env.Join(ctx, m)).To(Succeed())
	}
}, NodeTimeout(6*time.Minute))

// Whatever fails, show what the manager said about permissions and how it ended.
var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() && manager != nil {
		if f := manager.forbidden(); len(f) > 0 {
			fmt.Fprintf(GinkgoWriter, "manager log, forbidden requests:\n%s\n", strings.Join(f, "\n"))
		}
		fmt.Fprintf(GinkgoWriter, "manager log, last lines:\n%s\n", manager.tail(80))
	}
})

var _ = Describe("Installing with dist/install.yaml", Ordered, func() {
	It("grants the manager exactly the generated RBAC, as the Helm chart does", func() {
		roles, err := deploy.ReadGeneratedRoles(framework.RepoRoot())
		Expect(err).NotTo(HaveOccurred())
		perms, err := deploy.ManagerPermissions(installed)
		Expect(err).NotTo(HaveOccurred())
		cluster, _ := roles.GeneratedRules()
		Expect(deploy.DiffAtoms(cluster, perms.Cluster)).To(BeEmpty())

		helm, err := deploy.RenderChart(filepath.Join(framework.RepoRoot(), deploy.ChartDir), "flotilla", deploy.Namespace, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(deploy.CompareManagerRBAC(installed, helm)).To(BeEmpty(), "Helm and kustomize grant the manager different rules")
	})

	It("installs the ClusterRole as generated", func(ctx context.Context) {
		for _, want := range deploy.OfKind(installed, "ClusterRole") {
			got := &rbacv1.ClusterRole{}
			Expect(env.Host.Get(ctx, types.NamespacedName{Name: want.GetName()}, got)).To(Succeed())
			var w rbacv1.ClusterRole
			Expect(deploy.Into(want, &w)).To(Succeed())
			Expect(deploy.DiffAtoms(w.Rules, got.Rules)).To(BeEmpty())
		}
	})

	It("accepts every sample of config/samples", func(ctx context.Context) {
		samples, err := deploy.RenderObjects(filepath.Join(framework.RepoRoot(), "config", "samples"))
		Expect(err).NotTo(HaveOccurred())
		mapper := env.Host.RESTMapper()
		for _, s := range samples {
			s = s.DeepCopy()
			s.SetName("sample-" + s.GetName()) // the members joined under the samples' names
			m, err := mapper.RESTMapping(s.GroupVersionKind().GroupKind(), s.GroupVersionKind().Version)
			Expect(err).NotTo(HaveOccurred(), "%s is not served", s.GroupVersionKind())
			if m.Scope.Name() == "namespace" {
				if s.GetNamespace() == "" {
					s.SetNamespace("default")
				}
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.GetNamespace()}}
				if err := env.Host.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
					Expect(err).NotTo(HaveOccurred())
				}
			}
			Expect(env.Host.Create(ctx, s, client.DryRunAll)).To(Succeed(), "sample %s %s", s.GetKind(), s.GetName())
		}
	})

	It("elects the manager leader in its namespace", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(env.Host.Get(ctx, types.NamespacedName{Namespace: wellknown.SystemNamespace, Name: "flotilla-manager.flotilla.io"}, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("plays weighted-pipy: 2 replicas over two of three members, the Service on all three", func(ctx context.Context) {
		readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		framework.EventuallyClustersReady(readyCtx, env.Host, members...)

		n := &corev1.Namespace{}
		Expect(env.Host.Get(ctx, types.NamespacedName{Name: "default"}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[wellknown.PropagationLabel] = wellknown.PropagationEnabled
		Expect(env.Host.Patch(ctx, n, patch)).To(Succeed())

		scenario := filepath.Join(framework.RepoRoot(), "test", "testdata", "scenarios", "weighted-pipy")
		Expect(framework.Apply(ctx, env.Host, filepath.Join(scenario, "app.yaml"))).To(Succeed())
		Expect(framework.Apply(ctx, env.Host, filepath.Join(scenario, "policy.yaml"))).To(Succeed())

		// The members run no controllers, so only the Deployments' spec is checked.
		Eventually(func(g Gomega) {
			got := env.DeploymentReplicas(ctx, "default", "pipy")
			var holders, sum int32
			for _, r := range got {
				if r.Spec >= 0 {
					holders++
					sum += r.Spec
				}
			}
			g.Expect([]int32{holders, sum}).To(Equal([]int32{2, 2}), "replicas per member: %v", got)
		}).WithContext(ctx).Should(Succeed())
		for m, c := range env.Members {
			Eventually(func() error {
				return c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pipy"}, &corev1.Service{})
			}).WithContext(ctx).Should(Succeed(), "Service pipy is missing on %s", m)
		}
	}, SpecTimeout(4*time.Minute))

	// Whether or not the scenario got through, the manager must never have been refused.
	AfterAll(func() {
		Expect(manager.running()).To(BeTrue(), "the manager exited:\n%s", manager.tail(50))
		Expect(manager.forbidden()).To(BeEmpty(), "the installed RBAC misses a permission")
	})
})
