package scheduler_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/binding"
	schedulercontroller "github.com/flotilla-io/flotilla/controllers/scheduler"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
)

var (
	host *localcluster.Cluster
	c    client.Client

	// firstStatusGrace is the suite's: no binding-status controller runs here to report a
	// first placement made at creation, so the scheduler does, after this.
	firstStatusGrace = 2 * time.Second

	// placer is the suite's ResourceBinding scheduler, for PlaceNew.
	placer *schedulercontroller.Reconciler

	requestsMu sync.Mutex
	requests   = map[string]int{} // "METHOD path" → requests of the scheduler's manager
)

type countingTransport struct{ next http.RoundTripper }

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	requestsMu.Lock()
	requests[req.Method+" "+req.URL.Path]++
	requestsMu.Unlock()
	return t.next.RoundTrip(req)
}

// managerRequests is how many requests with method to path the scheduler's manager sent.
func managerRequests(method, path string) int {
	requestsMu.Lock()
	defer requestsMu.Unlock()
	return requests[method+" "+path]
}

func TestScheduler(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	RegisterFailHandler(Fail)
	// As fleettest.RunSuite: a failing wait with the spec's context reports its assertion.
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(2 * time.Minute)
	RunSpecs(t, "Scheduler reconciler suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	host, err = startHost(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(host.Stop)
	c, err = client.New(host.RESTConfig(), client.Options{Scheme: flotillascheme.New()})
	Expect(err).NotTo(HaveOccurred())
	stop, err := startScheduler(host, 8, 100)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
	for i := 1; i <= 3; i++ {
		Expect(createCluster(ctx, c, fmt.Sprintf("m%d", i), map[string]string{"tier": "gold"})).To(Succeed())
	}
}, NodeTimeout(3*time.Minute))

func startHost(ctx context.Context) (*localcluster.Cluster, error) {
	h, err := localcluster.Start(ctx, localcluster.Options{Name: "sched-host"})
	if err != nil {
		return nil, err
	}
	if _, err := h.InstallCRDs(ctx, filepath.Join("..", "..", "config", "crd", "bases")); err != nil {
		return nil, fmt.Errorf("%w (and stop: %v)", err, h.Stop())
	}
	return h, nil
}

// startScheduler runs a manager with only the scheduler controllers, as its own process
// would with other controllers disabled.
func startScheduler(h *localcluster.Cluster, workers int, qps float32) (func(), error) {
	cfg := h.RESTConfig()
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: flotillascheme.New(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := binding.SetupIndexes(ctx, mgr); err != nil {
		cancel()
		return nil, err
	}
	if err := schedulercontroller.SetupIndexes(ctx, mgr); err != nil {
		cancel()
		return nil, err
	}
	s, err := scheduler.New(scheduler.Options{})
	if err != nil {
		cancel()
		return nil, err
	}
	held := ledger.New(time.Hour)
	for _, nb := range []func() client.Object{
		func() client.Object { return &workv1alpha2.ResourceBinding{} },
		func() client.Object { return &workv1alpha2.ClusterResourceBinding{} },
	} {
		r := &schedulercontroller.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("default-scheduler"),
			Scheduler: s, NewBinding: nb, FirstStatusGrace: firstStatusGrace, Ledger: held}
		if err := r.SetupWithManager(mgr, workers); err != nil {
			cancel()
			return nil, err
		}
		if _, ok := nb().(*workv1alpha2.ResourceBinding); ok && placer == nil {
			placer = r
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// createCluster makes a Ready Cluster that serves apps/v1 Deployments and v1 ConfigMaps.
func createCluster(ctx context.Context, c client.Client, name string, labels map[string]string) error {
	cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"}}
	if err := c.Create(ctx, cl); err != nil {
		return err
	}
	return markReady(ctx, c, name)
}

// markReady reports the Cluster Ready, serving apps/v1 Deployments and v1 ConfigMaps, in one
// status update.
func markReady(ctx context.Context, c client.Client, name string) error {
	cl := &clusterv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, cl); err != nil {
		return err
	}
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: wellknown.ClusterConditionReady,
		Status: metav1.ConditionTrue, Reason: wellknown.ClusterReasonReady, Message: "test"})
	cl.Status.APIEnablements = []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}},
	}
	return c.Status().Update(ctx, cl)
}
