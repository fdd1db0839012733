package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// expectExactlyOnce checks that each of n ConfigMaps of the namespace is bound once, has one
// applied Work per cluster, and exists once in each cluster, with nothing else left over.
func expectExactlyOnce(ctx context.Context, ns string, n int, clusters ...string) {
	Eventually(func(g Gomega) {
		rbs := &workv1alpha2.ResourceBindingList{}
		g.Expect(env.Host.List(ctx, rbs, client.InNamespace(ns))).To(Succeed())
		g.Expect(rbs.Items).To(HaveLen(n))
		for _, c := range clusters {
			works := &workv1alpha1.WorkList{}
			g.Expect(env.Host.List(ctx, works, client.InNamespace(wellknown.ExecutionNamespace(c)))).To(Succeed())
			var ours int
			for _, w := range works.Items {
				if w.Annotations[wellknown.ResourceBindingNamespaceAnnotation] != ns {
					continue
				}
				ours++
				g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, wellknown.WorkConditionApplied)).To(BeTrue(), "Work %s/%s: %+v", w.Namespace, w.Name, w.Status.Conditions)
			}
			g.Expect(ours).To(Equal(n), "Works for %s in %s", ns, c)
			cms := &corev1.ConfigMapList{}
			g.Expect(env.Members[c].List(ctx, cms, client.InNamespace(ns), client.MatchingLabels{wellknown.ManagedLabel: wellknown.ManagedLabelValue})).To(Succeed())
			g.Expect(cms.Items).To(HaveLen(n), "ConfigMaps in %s", c)
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
}

var _ = Describe("Restarts", func() {
	It("applies every Work once after a member apiserver restarts mid-propagation", func(ctx context.Context) {
		ns := templateNamespace(ctx, "e2e-member-restart")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1", "member2", "member3"))).To(Succeed())
		m2 := env.Fleet.Member("member2")
		Expect(m2.StopAPIServer()).To(Succeed())
		restarted := false
		DeferCleanup(func(ctx context.Context) {
			if !restarted {
				_ = m2.StartAPIServer(ctx)
			}
		})
		for i := 0; i < 20; i++ {
			Expect(env.Host.Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", i), "v"))).To(Succeed())
		}
		// The other members get theirs while member2 is down.
		Eventually(memberValue(ctx, "member1", ns, "cm-19")).WithContext(ctx).Should(Equal("v"))
		Expect(m2.StartAPIServer(ctx)).To(Succeed())
		restarted = true
		expectExactlyOnce(ctx, ns, 20, "member1", "member2", "member3")
		env.EventuallyMemberSettled(ctx, "member2")
	})

	It("applies every Work once after the manager is killed mid-propagation and restarted", func(ctx context.Context) {
		dir := GinkgoT().TempDir()
		bin, err := framework.BuildManager(ctx)
		Expect(err).NotTo(HaveOccurred())
		kubeconfig, err := env.ManagerKubeconfig(ctx, dir)
		Expect(err).NotTo(HaveOccurred())

		// The binary takes over from the in-process manager.
		Expect(manager.Stop()).To(Succeed())
		run := func(name string) *exec.Cmd {
			cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--leader-elect", "--leader-election-namespace", wellknown.SystemNamespace,
				"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
				"--metrics-bind-address=0", "--health-probe-bind-address=0", "--cluster-probe-interval=1s")
			logf, err := os.Create(filepath.Join(dir, name+".log"))
			Expect(err).NotTo(HaveOccurred())
			cmd.Stdout, cmd.Stderr = logf, logf
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			Expect(cmd.Start()).To(Succeed())
			return cmd
		}
		first := run("first")
		DeferCleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })

		ns := templateNamespace(ctx, "e2e-manager-kill")
		Expect(env.Host.Create(ctx, policyTo(ns, "all", false, "member1", "member3"))).To(Succeed())
		for i := 0; i < 40; i++ {
			Expect(env.Host.Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", i), "v"))).To(Succeed())
			if i == 20 {
				// Some of the first templates are on their way.
				Eventually(memberValue(ctx, "member1", ns, "cm-0")).WithContext(ctx).Should(Equal("v"))
				Expect(first.Process.Signal(syscall.SIGKILL)).To(Succeed())
				_ = first.Wait()
			}
		}
		second := run("second")
		DeferCleanup(func() {
			_ = second.Process.Signal(syscall.SIGTERM)
			_ = second.Wait()
			data, _ := os.ReadFile(filepath.Join(dir, "second.log"))
			if strings.Contains(string(data), "forbidden") {
				AddReportEntry("manager log: forbidden", string(data))
			}
		})
		expectExactlyOnce(ctx, ns, 40, "member1", "member3")

		// Hand the suite its in-process manager back.
		Expect(second.Process.Signal(syscall.SIGTERM)).To(Succeed())
		_ = second.Wait()
		cfg, err := env.ManagerConfig(ctx)
		Expect(err).NotTo(HaveOccurred())
		manager, err = startManager(cfg)
		Expect(err).NotTo(HaveOccurred())
	})
})
