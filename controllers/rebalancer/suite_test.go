package rebalancer_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/rebalancer"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the WorkloadRebalancer controller alone, in-process, against a host
// apiserver with the CRDs. Tests create the bindings a detector would have created and read
// what the controller writes into them and into the rebalancers.
var env *fleettest.Env

func TestRebalancer(t *testing.T) {
	fleettest.RunSuite(t, "WorkloadRebalancer controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "rebalancer"})
	mgr := env.NewManager()
	Expect((&rebalancer.Reconciler{}).SetupWithManager(mgr, 2)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
