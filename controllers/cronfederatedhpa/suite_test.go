package cronfederatedhpa_test

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/controllers/cronfederatedhpa"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the CronFederatedHPA controller alone, in-process, against a host
// apiserver, with a clock the specs set: a rule fires when the clock has passed its next
// execution time and the CronFederatedHPA is looked at (the specs touch it), so no spec waits
// for a real minute.
var (
	env   *fleettest.Env
	clock = &fakeClock{t: time.Date(2026, 11, 28, 8, 0, 30, 0, time.UTC)}
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func TestCronFederatedHPA(t *testing.T) {
	fleettest.RunSuite(t, "CronFederatedHPA controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "cronfhpa"})
	mgr := env.NewManager()
	Expect((&cronfederatedhpa.Reconciler{Interpreter: interpreter.Interpreter{}, Now: clock.Now}).SetupWithManager(mgr)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
