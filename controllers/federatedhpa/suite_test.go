package federatedhpa_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-io/flotilla/controllers/federatedhpa"
	"github.com/flotilla-io/flotilla/internal/fhpa"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite runs the FederatedHPA controller alone, in-process, against a host apiserver,
// with a Collector the specs set: what each member's pods and metrics are, or that a member's
// metrics API is down (apiserver-only members serve no metrics.k8s.io; the e2e suite's full
// members do). Bindings are written by hand, as the detector and scheduler would.
var (
	env       *fleettest.Env
	collector = &fakeCollector{pods: map[string][]fhpa.Pod{}, errs: map[string]error{}}
)

// fakeCollector answers for each member what the specs set.
type fakeCollector struct {
	mu   sync.Mutex
	pods map[string][]fhpa.Pod // by cluster
	errs map[string]error
}

func (f *fakeCollector) Collect(_ context.Context, cluster, namespace string, sel labels.Selector) ([]fhpa.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs[cluster]; err != nil {
		return nil, err
	}
	var out []fhpa.Pod
	for _, p := range f.pods[cluster] {
		if p.Pod.Namespace == namespace && sel.Matches(labels.Set(p.Pod.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeCollector) set(cluster string, pods []fhpa.Pod, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[cluster] = pods
	f.errs[cluster] = err
}

var errDown = errors.New("the server is currently unable to handle the request (get pods.metrics.k8s.io)")

func TestFederatedHPA(t *testing.T) {
	fleettest.RunSuite(t, "FederatedHPA controller suite", "a host cluster")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "fhpa"})
	mgr := env.NewManager()
	Expect((&federatedhpa.Reconciler{Collector: collector, SyncPeriod: 300 * time.Millisecond}).SetupWithManager(mgr)).To(Succeed())
	fleettest.StartManager(mgr)
}, NodeTimeout(3*time.Minute))
