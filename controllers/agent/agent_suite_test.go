package agent_test

import (
	"context"
	"io"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flotilla-io/flotilla/controllers"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// The suite runs the agent in-process against a local fleet: a host with the CRDs and the
// whole Flotilla manager (as its ServiceAccount, with the RBAC the installation ships), and
// one apiserver-only member that the host has no credentials for. Intervals are short so
// that heartbeats and rotation show within seconds.
const (
	heartbeat        = time.Second
	failureThreshold = 5
)

var (
	env     *framework.Env
	manager *framework.Manager
)

func TestAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a host and a member cluster")
	}
	RegisterFailHandler(Fail)
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Pull agent suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = framework.StartFleetWith(ctx, localcluster.Options{}, localcluster.DefaultMembers(1, false), io.Discard)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Fleet.Stop)
	cfg, err := env.ManagerConfig(ctx)
	Expect(err).NotTo(HaveOccurred())
	manager, err = framework.StartManager(cfg, controllers.Options{ProbeInterval: heartbeat}, false)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = manager.Stop() })
}, NodeTimeout(3*time.Minute))
