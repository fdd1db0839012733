// Package fleettest is the shared setup of the controllers' integration suites: a local fleet
// started by internal/localcluster (a host with the CRDs, apiserver-only members), clients, an
// in-process controller-runtime manager that runs only what a suite registers, the cluster
// controller with short intervals, and joined members.
//
// It is for Ginkgo suites: helpers fail the running node with Gomega, and everything they
// start is stopped by DeferCleanup.
package fleettest

import (
	"context"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/cluster"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/internal/eventnote"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/member"
)

// Short intervals, so that member health shows within seconds.
const (
	ProbeInterval    = time.Second
	StatusInterval   = 5 * time.Second
	FailureThreshold = 3
	ProbeTimeout     = 2 * time.Second
)

// Options say what fleet a suite needs.
type Options struct {
	// Name prefixes the host's name, so that logs and state dirs say which suite they are.
	Name string
	// Members is the number of apiserver-only members, named member1..memberN.
	Members int
	// ControllerManager runs kube-controller-manager in the host (garbage collection,
	// namespace deletion, the workload controllers).
	ControllerManager bool
	// ControllerManagerArgs replace or add kube-controller-manager flags in the host.
	ControllerManagerArgs []string
}

// Env is a running fleet with admin clients.
type Env struct {
	Fleet  *localcluster.Fleet
	Scheme *k8sruntime.Scheme
	// Host is an uncached admin client of the host.
	Host client.Client
	// Members are uncached admin clients of the members, by name.
	Members map[string]client.Client

	requests requestLog
	// memberRequests counts the member requests of the connections SetupClusterController
	// makes, by cluster, method and path; memberHook runs before each.
	memberRequests requestLog
	memberHook     func(cluster string, req *http.Request)
}

// requestLog counts the host requests of the managers NewManager makes, by method and path.
type requestLog struct {
	mu     sync.Mutex
	counts map[string]int
}

type countingTransport struct {
	next http.RoundTripper
	log  *requestLog
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.log.mu.Lock()
	if t.log.counts == nil {
		t.log.counts = map[string]int{}
	}
	t.log.counts[req.Method+" "+req.URL.Path]++
	t.log.mu.Unlock()
	return t.next.RoundTrip(req)
}

// ManagerRequests is how many requests with method to path the managers made by NewManager
// have sent to the host, e.g. ("PATCH",
// "/apis/work.karmada.io/v1alpha2/namespaces/ns/resourcebindings/web-deployment/status").
func (e *Env) ManagerRequests(method, path string) int {
	e.requests.mu.Lock()
	defer e.requests.mu.Unlock()
	return e.requests.counts[method+" "+path]
}

// MemberRequests is how many requests with method to path the member connections made by
// SetupClusterController sent to the member cluster.
func (e *Env) MemberRequests(cluster, method, path string) int {
	e.memberRequests.mu.Lock()
	defer e.memberRequests.mu.Unlock()
	return e.memberRequests.counts[cluster+" "+method+" "+path]
}

// OnMemberRequest makes hook run before each request those connections send (nil: none), for
// specs that change a member between two of a controller's requests. It is dropped at the end
// of the calling node.
func (e *Env) OnMemberRequest(hook func(cluster string, req *http.Request)) {
	e.memberRequests.mu.Lock()
	e.memberHook = hook
	e.memberRequests.mu.Unlock()
	DeferCleanup(func() {
		e.memberRequests.mu.Lock()
		e.memberHook = nil
		e.memberRequests.mu.Unlock()
	})
}

// HoldMemberList holds cluster's GET requests of the collection at path (a list, or a watch,
// which streams the list first as client-go's WatchListClient does: the member cache's first
// list of a kind) until release is called, at the latest at the end of the calling node.
// release may be called more than once. It takes the place of OnMemberRequest's hook.
func (e *Env) HoldMemberList(cluster, path string) (release func()) {
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	e.OnMemberRequest(func(c string, req *http.Request) {
		if c == cluster && req.Method == http.MethodGet && req.URL.Path == path {
			<-held
		}
	})
	DeferCleanup(release)
	return release
}

// memberTransport counts, and runs the hook before, each request to one member.
type memberTransport struct {
	next    http.RoundTripper
	env     *Env
	cluster string
}

func (t memberTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	l := &t.env.memberRequests
	l.mu.Lock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[t.cluster+" "+req.Method+" "+req.URL.Path]++
	hook := t.env.memberHook
	l.mu.Unlock()
	if hook != nil {
		hook(t.cluster, req)
	}
	return t.next.RoundTrip(req)
}

// RepoRoot is the repository root (the directory holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Start starts the fleet with the CRDs installed in the host, sets the controller-runtime
// logger and Gomega's Eventually defaults, and stops the fleet at the end of the calling node
// (call it from BeforeSuite).
func Start(ctx context.Context, o Options) *Env {
	GinkgoHelper()
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	// Eventually(...).WithContext(ctx) would otherwise wait until the spec's context ends.
	EnforceDefaultTimeoutsWhenUsingContexts()

	host := localcluster.Options{ControllerManager: o.ControllerManager, ExtraControllerManagerArgs: o.ControllerManagerArgs}
	if o.Name != "" {
		host.Name = o.Name + "-host"
	}
	f, err := localcluster.StartFleet(ctx, localcluster.FleetOptions{
		CRDDir:  filepath.Join(RepoRoot(), "config", "crd", "bases"),
		Host:    host,
		Members: localcluster.DefaultMembers(o.Members, false),
		Log:     GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.Stop)

	e := &Env{Fleet: f, Scheme: flotillascheme.New(), Members: map[string]client.Client{}}
	e.Host, err = client.New(f.Host.RESTConfig(), client.Options{Scheme: e.Scheme})
	Expect(err).NotTo(HaveOccurred())
	for _, m := range f.Members {
		c, err := client.New(m.RESTConfig(), client.Options{Scheme: e.Scheme})
		Expect(err).NotTo(HaveOccurred())
		e.Members[m.Name] = c
	}
	return e
}

// MemberNames are the names of the members, in order.
func (e *Env) MemberNames() []string {
	names := make([]string, 0, len(e.Fleet.Members))
	for _, m := range e.Fleet.Members {
		names = append(names, m.Name)
	}
	return names
}

// NewManager returns a manager against the host with the production cache options, no
// metrics or health endpoints, and nothing registered: the suite adds only the controllers
// under test.
func (e *Env) NewManager() ctrl.Manager {
	GinkgoHelper()
	cfg := e.Fleet.Host.RESTConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, log: &e.requests} })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 e.Scheme,
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	return eventnote.Manager(mgr)
}

// RunSuite runs the package's Ginkgo suite, unless tests are -short: the suites start real
// clusters. starts says which, for the skip message.
func RunSuite(t *testing.T, description, starts string) {
	if testing.Short() {
		t.Skip("starts " + starts)
	}
	RegisterFailHandler(Fail)
	// An Eventually given the spec's context and no timeout of its own waits at most this
	// long (a suite may set another default in its BeforeSuite): without it, a failing one
	// waited for the spec's context, which has no deadline without a SpecTimeout, and the
	// run ended at go test's timeout with a goroutine dump instead of the assertion.
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(2 * time.Minute)
	RunSpecs(t, description)
}

// BindingKinds returns constructors of both binding kinds, for the controllers registered
// once per kind.
func BindingKinds() []func() client.Object {
	return []func() client.Object{
		func() client.Object { return &workv1alpha2.ResourceBinding{} },
		func() client.Object { return &workv1alpha2.ClusterResourceBinding{} },
	}
}

// Isolated starts a host of its own with the named Clusters (and their execution
// namespaces; no member clusters) and a started manager that holds the binding controller's
// indexes and no controller: for a spec that drives one reconciler by hand, with a client
// that shows it a stale cache, while nothing else writes what it writes.
func Isolated(ctx context.Context, name string, clusters ...string) (*Env, ctrl.Manager) {
	GinkgoHelper()
	e := Start(ctx, Options{Name: name})
	if len(clusters) > 0 {
		e.CreateClusters(ctx, clusters...)
	}
	mgr := e.NewManager()
	Expect(binding.SetupIndexes(context.Background(), mgr)).To(Succeed())
	StartManager(mgr)
	return e, mgr
}

// ReconcileBinding runs r once for req, a ResourceBinding's key, and returns the binding's
// condition of type condType as the host has it afterwards (nil when it has none): what a
// spec that drives one reconciler by hand checks after each step.
func (e *Env) ReconcileBinding(ctx context.Context, r reconcile.Reconciler, req reconcile.Request, condType string) *metav1.Condition {
	GinkgoHelper()
	_, err := r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	got := &workv1alpha2.ResourceBinding{}
	Expect(e.Host.Get(ctx, req.NamespacedName, got)).To(Succeed())
	return meta.FindStatusCondition(got.Status.Conditions, condType)
}

// StartManager runs mgr until the end of the calling node.
func StartManager(mgr ctrl.Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		<-done
	})
}

// SetupClusterController registers the cluster controller with short intervals and returns
// the member connection manager it fills, for the controllers that use members. Connections
// are dropped at the end of the calling node.
func (e *Env) SetupClusterController(mgr ctrl.Manager) *member.Manager {
	GinkgoHelper()
	members := member.NewManager(e.Scheme, member.Options{FailureThreshold: FailureThreshold, ProbeTimeout: ProbeTimeout, ProbeInterval: ProbeInterval,
		WrapTransport: func(cluster string, rt http.RoundTripper) http.RoundTripper {
			return memberTransport{next: rt, env: e, cluster: cluster}
		}})
	Expect((&cluster.Reconciler{Members: members}).SetupWithManager(mgr, cluster.Options{
		ProbeInterval: ProbeInterval, StatusInterval: StatusInterval,
	})).To(Succeed())
	DeferCleanup(func() {
		for _, name := range members.Names() {
			members.Disconnect(name)
		}
	})
	return members
}

// JoinMembers joins every member as `kubectl flotilla join` does.
func (e *Env) JoinMembers(ctx context.Context) {
	GinkgoHelper()
	for i, m := range e.Fleet.Members {
		o := e.Fleet.MemberOptions[i]
		_, err := join.Join(ctx, join.Options{Name: m.Name, Host: e.Fleet.Host.RESTConfig(), Member: m.RESTConfig(),
			Provider: o.Provider, Region: o.Region, Zone: o.Zone})
		Expect(err).NotTo(HaveOccurred())
	}
}

// WaitClustersReady waits until the named Clusters are Ready and their execution
// namespaces exist.
func (e *Env) WaitClustersReady(ctx context.Context, names ...string) {
	GinkgoHelper()
	for _, n := range names {
		Eventually(func(g Gomega) {
			c := &clusterv1alpha1.Cluster{}
			g.Expect(e.Host.Get(ctx, client.ObjectKey{Name: n}, c)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, wellknown.ClusterConditionReady)).To(BeTrue(),
				"Cluster %s is not Ready: %+v", n, c.Status.Conditions)
			g.Expect(e.Host.Get(ctx, client.ObjectKey{Name: wellknown.ExecutionNamespace(n)}, &corev1.Namespace{})).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
	}
}

// CreateClusters creates Cluster objects and their execution namespaces, as join and the
// cluster controller would, without connecting to anything: for suites that only need the
// Clusters to exist. Each Cluster gets the label name=<name> and the numbered provider,
// region and zone of localcluster.DefaultMembers.
func (e *Env) CreateClusters(ctx context.Context, names ...string) {
	GinkgoHelper()
	topo := localcluster.DefaultMembers(len(names), false)
	for i, n := range names {
		c := &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"name": n, "index": strconv.Itoa(i + 1)}},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1",
				Provider: topo[i].Provider, Region: topo[i].Region, Zones: []string{topo[i].Zone}},
		}
		Expect(e.Host.Create(ctx, c)).To(Succeed())
		e.CreateNamespace(ctx, wellknown.ExecutionNamespace(n), nil)
	}
}

// CreateNamespace creates a namespace in the host with the given labels.
func (e *Env) CreateNamespace(ctx context.Context, name string, labels map[string]string) *corev1.Namespace {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	Expect(e.Host.Create(ctx, ns)).To(Succeed())
	return ns
}

// TemplateNamespace creates a namespace opted in to propagation.
func (e *Env) TemplateNamespace(ctx context.Context, name string) *corev1.Namespace {
	GinkgoHelper()
	return e.CreateNamespace(ctx, name, map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled})
}

// Events returns the events (events.k8s.io/v1, as the controllers record them) regarding
// obj, oldest first.
func (e *Env) Events(ctx context.Context, g Gomega, obj client.Object) []eventsv1.Event {
	list := &eventsv1.EventList{}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	g.Expect(e.Host.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Name == obj.GetName() && ev.Regarding.Namespace == obj.GetNamespace() &&
			(ev.Regarding.UID == "" || ev.Regarding.UID == obj.GetUID()) {
			out = append(out, ev)
		}
	}
	return out
}

// EventReasons returns the reasons of the events regarding obj.
func (e *Env) EventReasons(ctx context.Context, g Gomega, obj client.Object) []string {
	var out []string
	for _, ev := range e.Events(ctx, g, obj) {
		out = append(out, ev.Reason)
	}
	return out
}

// Get reads obj from the host by its key, failing g when it cannot.
func (e *Env) Get(ctx context.Context, g Gomega, obj client.Object) {
	g.Expect(e.Host.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
}

// Gone reports whether obj no longer exists in c, for Eventually.
func Gone(ctx context.Context, c client.Client, obj client.Object) func() bool {
	return func() bool {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err)
	}
}

// Release removes every finalizer of obj in the host, standing in for the controllers a
// suite does not run, so that an object they would finalize can go.
func (e *Env) Release(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := obj.DeepCopyObject().(client.Object)
		err := e.Host.Get(ctx, client.ObjectKeyFromObject(obj), cur)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		if len(cur.GetFinalizers()) == 0 {
			return
		}
		patch := client.MergeFromWithOptions(cur.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		cur.SetFinalizers(nil)
		g.Expect(client.IgnoreNotFound(e.Host.Patch(ctx, cur, patch))).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

// SetupExecution registers the execution controller, which applies Works through members.
func SetupExecution(mgr ctrl.Manager, members *member.Manager) {
	GinkgoHelper()
	Expect((&execution.Reconciler{
		Client: mgr.GetClient(), Members: members, Recorder: mgr.GetEventRecorder("execution-controller"),
		Interpreter: interpreter.Interpreter{},
	}).SetupWithManager(mgr, 4)).To(Succeed())
}

// SetupClusterAndExecution registers the cluster controller and the execution controller,
// which the suites that apply Works need, and returns the member connection manager they
// share.
func (e *Env) SetupClusterAndExecution(mgr ctrl.Manager) *member.Manager {
	GinkgoHelper()
	members := e.SetupClusterController(mgr)
	SetupExecution(mgr, members)
	return members
}

// JoinAndWait joins every member and waits until all are Ready.
func (e *Env) JoinAndWait(ctx context.Context) {
	GinkgoHelper()
	e.JoinMembers(ctx)
	e.WaitClustersReady(ctx, e.MemberNames()...)
}

// Applied returns the Work's Applied condition, read from the host; nil when absent.
func (e *Env) Applied(ctx context.Context, g Gomega, w *workv1alpha1.Work) *metav1.Condition {
	e.Get(ctx, g, w)
	return meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
}

// ExpectApplied waits until the Work's Applied condition has the status and reason, for the
// Work's current generation.
func (e *Env) ExpectApplied(ctx context.Context, w *workv1alpha1.Work, status metav1.ConditionStatus, reason string) *metav1.Condition {
	GinkgoHelper()
	var c *metav1.Condition
	Eventually(func(g Gomega) {
		c = e.Applied(ctx, g, w)
		g.Expect(c).NotTo(BeNil(), "no Applied condition")
		g.Expect(c.Status).To(Equal(status), "Applied: %s %s", c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(reason), "Applied: %s %s", c.Reason, c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(w.Generation))
	}).WithContext(ctx).Should(Succeed())
	return c
}
