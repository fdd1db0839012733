package workstatus_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/workstatus"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the work-status controllers (WorkReconciler and the AggregateReconcilers of
// both binding kinds), in-process, against a host apiserver and two apiserver-only members,
// with the cluster controller (to connect the members) and the execution controller (to
// apply the Works) beside them. The tests write bindings and their Works directly, as the
// detector, scheduler and binding controller would, and write member status by hand through
// the status subresource, since no controller runs in the members.
var (
	env *fleettest.Env
	// members are the suite's member connections.
	members *member.Manager
)

func TestWorkStatusControllers(t *testing.T) {
	fleettest.RunSuite(t, "Work status controllers suite", "a host and two member clusters")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "workstatus", Members: 2})
	mgr := env.NewManager()
	members = env.SetupClusterAndExecution(mgr)
	// The aggregators find a binding's Works through the binding controller's index.
	Expect(binding.SetupIndexes(context.Background(), mgr)).To(Succeed())
	Expect((&workstatus.WorkReconciler{Client: mgr.GetClient(), Members: members, Interpreter: interpreter.Interpreter{}}).
		SetupWithManager(mgr, 4)).To(Succeed())
	for _, nb := range fleettest.BindingKinds() {
		Expect((&workstatus.AggregateReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("binding-status-controller"),
			NewBinding: nb, Interpreter: interpreter.Interpreter{}, APIReader: mgr.GetAPIReader(), SuccessEvents: true}).SetupWithManager(mgr, 4)).To(Succeed())
	}
	fleettest.StartManager(mgr)
	env.JoinAndWait(ctx)
}, NodeTimeout(3*time.Minute))
