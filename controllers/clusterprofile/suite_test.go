package clusterprofile_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/controllers/clusterprofile"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the cluster controller (which probes the members and keeps their Clusters'
// status) and the ClusterProfile controller, in-process, against a host with the CRDs and two
// apiserver-only members joined as `kubectl flotilla join` joins them. No garbage collector
// runs in the host: what is removed is removed by the controller itself.
var (
	env *fleettest.Env
	mgr ctrl.Manager
)

func TestClusterProfileController(t *testing.T) {
	fleettest.RunSuite(t, "ClusterProfile controller suite", "a host and two member clusters")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "clusterprofile", Members: 2})
	mgr = env.NewManager()
	env.SetupClusterController(mgr)
	Expect((&clusterprofile.Reconciler{}).SetupWithManager(mgr)).To(Succeed())
	fleettest.StartManager(mgr)
	env.JoinMembers(ctx)
	env.WaitClustersReady(ctx, env.MemberNames()...)
}, NodeTimeout(5*time.Minute))
