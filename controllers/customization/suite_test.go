package customization_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/controllers/customization"
	store "github.com/flotilla-io/flotilla/internal/customization"
	"github.com/flotilla-io/flotilla/internal/interpreterwebhook"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the customization controller alone, in-process, against a host apiserver,
// with a real store. Tests read what the store holds and the conditions and events the
// controller writes.
var (
	env     *fleettest.Env
	st      *store.Store
	changes = make(chan schema.GroupKind, 100)
	// hooks are the interpreter webhooks in use; webhookChanges get the matchers of the
	// kinds their configurations' changes affect.
	hooks          *interpreterwebhook.Registry
	webhookChanges = make(chan func(schema.GroupKind) bool, 100)
)

func TestCustomization(t *testing.T) {
	fleettest.RunSuite(t, "Customization controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "customization"})
	mgr := env.NewManager()
	r := customization.New(mgr.GetClient(), mgr.GetEventRecorder("customization-controller"), func(gk schema.GroupKind) { changes <- gk })
	st = store.NewStore(store.Options{OnFailure: r.Failed})
	r.Store = st
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	wr := customization.NewWebhookReconciler(mgr.GetClient(), mgr.GetEventRecorder("interpreter-webhook-controller"),
		func(m func(schema.GroupKind) bool) { webhookChanges <- m })
	hooks = interpreterwebhook.NewRegistry(interpreterwebhook.Options{OnFailure: wr.Failed})
	wr.Webhooks = hooks
	Expect(wr.SetupWithManager(mgr)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
