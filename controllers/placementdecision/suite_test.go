package placementdecision_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/controllers/placementdecision"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the PlacementDecision controllers (ResourceBindings and
// ClusterResourceBindings) alone, in-process, against a host apiserver with the CRDs. No
// scheduler runs: the tests write the bindings' spec.clusters as the scheduler would, and no
// garbage collector: what is removed is removed by the controller.
var (
	env *fleettest.Env
	mgr ctrl.Manager
)

func TestPlacementDecisionController(t *testing.T) {
	fleettest.RunSuite(t, "PlacementDecision controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "placementdecision"})
	mgr = env.NewManager()
	for _, nb := range fleettest.BindingKinds() {
		Expect((&placementdecision.Reconciler{NewBinding: nb, ProfileNamespace: inventory, SuccessEvents: true}).SetupWithManager(mgr)).To(Succeed())
	}
	fleettest.StartManager(mgr)
	env.CreateNamespace(ctx, inventory, nil)
	env.CreateNamespace(ctx, apps, nil)
}, NodeTimeout(3*time.Minute))
