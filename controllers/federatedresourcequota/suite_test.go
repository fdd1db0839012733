package federatedresourcequota_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/controllers/federatedresourcequota"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the FederatedResourceQuota controller alone, in-process, against a host
// apiserver with the CRDs. No member is started and neither the execution nor the
// work-status controller runs: the tests create the execution namespaces of the "joined"
// clusters, write the Works' status as those controllers would (Applied, the reflected
// ResourceQuota status) and remove the execution finalizer of deleted Works.
var (
	env *fleettest.Env
	mgr ctrl.Manager
)

func TestFederatedResourceQuota(t *testing.T) {
	fleettest.RunSuite(t, "FederatedResourceQuota controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "frq"})
	mgr = env.NewManager()
	Expect((&federatedresourcequota.Reconciler{}).SetupWithManager(mgr, 2)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
