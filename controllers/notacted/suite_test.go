package notacted_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/notacted"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the controllers alone, in-process, against a host apiserver with the CRDs;
// the tests write policies and Clusters and read their events.
var env *fleettest.Env

func TestFieldsNotActedOn(t *testing.T) {
	fleettest.RunSuite(t, "Fields-not-acted-on controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "notacted"})
	mgr := env.NewManager()
	Expect(notacted.SetupWithManager(mgr)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
