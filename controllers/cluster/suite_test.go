package cluster_test

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/controllers/cluster"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the cluster controller alone, in-process, against a local fleet: a host
// with the CRDs and a kube-controller-manager (so that deleted namespaces go away), three
// apiserver-only members and one full member (controller manager, scheduler and kwok Nodes)
// whose Pods really get scheduled. Intervals are short so that health changes show within
// seconds.
const (
	probeInterval    = time.Second
	statusInterval   = 2 * time.Second
	failureThreshold = 3
	probeTimeout     = 2 * time.Second

	// fullMember is the member that schedules and runs Pods (on kwok's fake Nodes).
	fullMember = "full"

	// notReadyWithin is how soon a member whose apiserver stopped must be reported:
	// failureThreshold probes, one interval apart, each failing at once (connection
	// refused), plus slack for a loaded machine.
	notReadyWithin = failureThreshold*probeInterval + 5*time.Second
	// readyWithin is how soon a member that answers again must be reported Ready: the next
	// probe, plus slack.
	readyWithin = probeInterval + 5*time.Second
)

var (
	fleet      *localcluster.Fleet
	hostClient client.Client
	members    *member.Manager
)

func TestClusterController(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a host and four member clusters")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "Cluster controller suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// As fleettest.RunSuite: a failing wait with the spec's context reports its assertion.
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)

	var err error
	fleet, err = localcluster.StartFleet(ctx, localcluster.FleetOptions{
		CRDDir: filepath.Join("..", "..", "config", "crd", "bases"),
		Host:   localcluster.Options{ControllerManager: true},
		Members: append(localcluster.DefaultMembers(3, false), localcluster.MemberOptions{
			Options: localcluster.Options{Name: fullMember, Full: true}, Provider: "aws", Region: "eu-west-1", Zone: "eu-west-1a",
		}),
		Log: GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(fleet.Stop)

	scheme := flotillascheme.New()
	hostClient, err = client.New(fleet.Host.RESTConfig(), client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(fleet.Host.RESTConfig(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	members = member.NewManager(scheme, member.Options{FailureThreshold: failureThreshold, ProbeTimeout: probeTimeout, ProbeInterval: probeInterval})
	Expect((&cluster.Reconciler{Members: members}).SetupWithManager(mgr, cluster.Options{
		ProbeInterval: probeInterval, StatusInterval: statusInterval,
	})).To(Succeed())

	DeferCleanup(func() {
		for _, name := range members.Names() {
			members.Disconnect(name)
		}
	})
	fleettest.StartManager(mgr) // stopped before the members are disconnected
}, NodeTimeout(5*time.Minute))
