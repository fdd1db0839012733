package execution_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the execution controller, in-process, against a host apiserver and two
// apiserver-only members, with the cluster controller beside it to connect the members (the
// two share the member connection manager). The tests write Works directly, as the binding
// controller would, with the execution finalizer it sets on create.
var env *fleettest.Env

func TestExecutionController(t *testing.T) {
	fleettest.RunSuite(t, "Execution controller suite", "a host and two member clusters")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "execution", Members: 2})
	mgr := env.NewManager()
	env.SetupClusterAndExecution(mgr)
	fleettest.StartManager(mgr)
	env.JoinAndWait(ctx)
}, NodeTimeout(3*time.Minute))
