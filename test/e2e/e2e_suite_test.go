// Package e2e plays the user scenarios end to end on a local fleet: a host with its own
// kube-controller-manager and three full members (kube-controller-manager, kube-scheduler and
// kwok), so Deployments really reach Ready, with the manager running as its ServiceAccount.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flotilla-io/flotilla/controllers"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

var (
	env     *framework.Env
	manager *framework.Manager
)

func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet of real clusters")
	}
	RegisterFailHandler(Fail)
	setLogger(t)
	// Eventually(...).WithContext(ctx) must still time out after the default.
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "End-to-end suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = framework.StartFleet(ctx, heterogeneousMembers(), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Fleet.Stop)

	// Cluster API's CRDs on the host before the manager starts: it then joins the Cluster API
	// Clusters labelled for the fleet (test/e2e/inventory_test.go).
	_, err = env.Fleet.Host.InstallCRDs(ctx, filepath.Join(framework.RepoRoot(), "controllers", "capijoin", "testdata"))
	Expect(err).NotTo(HaveOccurred())

	cfg, err := env.ManagerConfig(ctx)
	Expect(err).NotTo(HaveOccurred())
	manager, err = startManager(cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = manager.Stop() })

	for _, m := range []string{"member1", "member2", "member3"} {
		Expect(env.Join(ctx, m)).To(Succeed())
	}
	framework.EventuallyClustersReady(ctx, env.Host, "member1", "member2", "member3")
}, NodeTimeout(5*time.Minute))

// heterogeneousMembers are the default three full members, with a small node (2 CPUs) beside
// the two large ones (8 CPUs) of member1 and member2; member3's large nodes have GPUs
// (scheduling_test.go).
func heterogeneousMembers() []localcluster.MemberOptions {
	members := localcluster.DefaultMembers(3, true)
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	for _, i := range []int{0, 1} {
		members[i].Nodes = []localcluster.NodeSpec{{}, {}, {Capacity: small}}
	}
	return members
}

func startManager(cfg *rest.Config) (*framework.Manager, error) {
	// NoExecute taints on, as a platform that wants cluster failover runs it; the default
	// tolerations (300 s) keep every other spec's short member outages from moving anything.
	// PlacementDecisions on too (opt-in for users), so the inventory spec sees them. Members'
	// capacity every 5 s, not 30: the scheduler estimates room from it, and a spec must not
	// wait half a minute for the pods of the spec before it to leave the estimate.
	// FederatedHPAs every second, not 15: the spec measures the scale-up latency. The
	// descheduler on (opt-in for users), with a 3 s threshold instead of 5 minutes, so that
	// its spec (descheduler_test.go) sees a replica move in seconds.
	return framework.StartManager(cfg, controllers.Options{ProbeInterval: time.Second, StatusInterval: 5 * time.Second,
		NoExecuteTaints: true, PlacementDecisions: true, FederatedHPASyncPeriod: time.Second,
		Descheduler: controllers.Descheduler{Enabled: true, Threshold: 3 * time.Second}}, true)
}

// setLogger sends the in-process manager's log to the file FLOTILLA_E2E_LOG names, at debug
// level (to follow a failing spec's keys); without it the log is dropped.
func setLogger(t *testing.T) {
	path := os.Getenv("FLOTILLA_E2E_LOG")
	if path == "" {
		ctrl.SetLogger(logr.Discard())
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("FLOTILLA_E2E_LOG: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	ctrl.SetLogger(zap.New(zap.WriteTo(f), zap.Level(zapcore.DebugLevel)))
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }
