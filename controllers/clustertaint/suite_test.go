package clustertaint_test

import (
	"time"

	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/controllers/clustertaint"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the ClusterTaintPolicy controller alone, in-process, against a host
// apiserver with the CRDs. No member is started and no cluster controller runs: the tests
// write the Clusters' conditions themselves, as the cluster controller (or a third party)
// would, and read the taints, events and admission errors.
var (
	env *fleettest.Env
	mgr ctrl.Manager
)

func TestClusterTaintPolicy(t *testing.T) {
	fleettest.RunSuite(t, "ClusterTaintPolicy controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "clustertaint"})
	mgr = env.NewManager()
	Expect((&clustertaint.Reconciler{}).SetupWithManager(mgr, 2)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
