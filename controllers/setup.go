// Package controllers wires every Flotilla reconciler into one controller-runtime manager.
// main.go and the end-to-end tests both call Setup, so tests run exactly what ships.
package controllers

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/capijoin"
	"github.com/flotilla-io/flotilla/controllers/cluster"
	"github.com/flotilla-io/flotilla/controllers/clusterprofile"
	"github.com/flotilla-io/flotilla/controllers/clustertaint"
	"github.com/flotilla-io/flotilla/controllers/cronfederatedhpa"
	customizationcontroller "github.com/flotilla-io/flotilla/controllers/customization"
	"github.com/flotilla-io/flotilla/controllers/dependencies"
	"github.com/flotilla-io/flotilla/controllers/descheduler"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/controllers/failover"
	"github.com/flotilla-io/flotilla/controllers/federatedhpa"
	"github.com/flotilla-io/flotilla/controllers/federatedresourcequota"
	mcscontroller "github.com/flotilla-io/flotilla/controllers/mcs"
	"github.com/flotilla-io/flotilla/controllers/namespace"
	"github.com/flotilla-io/flotilla/controllers/notacted"
	"github.com/flotilla-io/flotilla/controllers/placementdecision"
	"github.com/flotilla-io/flotilla/controllers/rebalancer"
	rolloutcontroller "github.com/flotilla-io/flotilla/controllers/rollout"
	schedulercontroller "github.com/flotilla-io/flotilla/controllers/scheduler"
	"github.com/flotilla-io/flotilla/controllers/workstatus"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/cachetrim"
	"github.com/flotilla-io/flotilla/internal/handoff"
	"github.com/flotilla-io/flotilla/internal/hostclient"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/memberqueue"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/pkg/scheduler/config"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// CacheOptions are the manager's cache options: objects are cached without managedFields,
// which server-side apply makes large and no reconciler reads, and with one copy of each
// string that repeats between them (cachetrim.HostObject).
func CacheOptions() cache.Options {
	return cache.Options{DefaultTransform: cachetrim.HostObject}
}

// Options configure the reconcilers. Zero values take the defaults in DefaultOptions.
type Options struct {
	// Workers is the number of concurrent reconciles per controller.
	Workers int
	// MemberQPS and MemberBurst limit each member cluster client.
	MemberQPS   float32
	MemberBurst int
	// ProbeInterval is how often member clusters are probed.
	ProbeInterval time.Duration
	// StatusInterval is how often a member's version, APIs and capacity are collected.
	StatusInterval time.Duration
	// FederatedHPASyncPeriod is how often each FederatedHPA reads its members' metrics and
	// computes its replicas.
	FederatedHPASyncPeriod time.Duration
	// FailureThreshold is how many failed probes in a row make a member NotReady.
	FailureThreshold int
	// EnableEmptyWorkloadPropagation keeps clusters that were divided 0 replicas.
	EnableEmptyWorkloadPropagation bool
	// SchedulerName is the scheduler name this manager answers to.
	SchedulerName string
	// SchedulerPlugins are scheduler plugins beside the default ones (pkg/manager's
	// WithSchedulerPlugins), run after them.
	SchedulerPlugins []framework.Plugin
	// SchedulerProfile enables, disables and weighs the scheduler's plugins
	// (--scheduler-plugins, --scheduler-config); the zero value runs them all.
	SchedulerProfile config.Plugins
	// SchedulerHoldTTL bounds how long a placement its member has not reported yet is
	// subtracted from the clusters' estimated room (ledger.DefaultTTL when 0).
	SchedulerHoldTTL time.Duration
	// MemberWorkers is how many Works of one member cluster are applied at once, on workers
	// of that member's own (a slow member never holds the others' workers).
	MemberWorkers int
	// MemberWorkTimeout bounds the work on one key of a member's workers (a Work's apply, a
	// service's export); it is then retried with backoff. Zero: memberqueue.DefaultTimeout.
	MemberWorkTimeout time.Duration
	// HoldControllers are identities added to namespace.DefaultHostControllers: host
	// controllers whose writes to templates the hold denies.
	HoldControllers []string
	// NoExecuteTaints taints not-ready and unreachable members NoExecute too, so that
	// workloads leave them once their tolerations run out (Karmada's
	// --enable-no-execute-taint-eviction; off by default, as there).
	NoExecuteTaints bool
	// Failover are the failover controller's tolerations and grace period; zero values
	// take failover.DefaultOptions.
	Failover failover.Options
	// Descheduler moves replicas that stay unschedulable in a member to clusters with room
	// (--descheduler, off by default as Karmada's is a separate component to install).
	Descheduler Descheduler
	// Sharding splits the work of the binding and Work controllers between replicas.
	Sharding Sharding
	// NoBuiltinInterpreters leaves out the built-in customizations of third-party kinds
	// (internal/customization/builtin; --builtin-interpreters=false).
	NoBuiltinInterpreters bool
	// ClusterProfiles configure the ClusterProfile controller (on by default).
	ClusterProfiles clusterprofile.Options
	// PlacementDecisions publishes each binding's placement as PlacementDecisions (off by
	// default).
	PlacementDecisions bool
	// RecordSuccessEvents records the Normal events that only say a template's propagation
	// went as asked (AggregateStatusSucceed when a binding is first FullyApplied,
	// SyncWorkSucceed, SyncScheduleResultToDependenciesSucceed, PlacementDecisionPublished).
	// Off by default: each is a write to the host per template, and needs nobody's attention.
	// Failures and state changes (a new policy or placement, a recovery, an eviction, a
	// cluster's health) are always recorded.
	RecordSuccessEvents bool
	// NoClusterAPIJoin turns off joining Cluster API Clusters labelled flotilla.io/join=true
	// (on by default when Cluster API's CRDs are on the host).
	NoClusterAPIJoin bool
}

// Descheduler configures the descheduler (controllers/descheduler).
type Descheduler struct {
	// Enabled runs it.
	Enabled bool
	// Threshold is how long replicas stay unschedulable before they move
	// (--descheduler-unschedulable-threshold); 0 is Karmada's 5 minutes.
	Threshold time.Duration
}

// Sharding configures sharded managers. With Shards above 1, the scheduler, binding,
// failover, binding-status, execution and work-status controllers run on every replica, each
// reconciling the bindings and Works of the shards whose Lease it holds (internal/shard);
// the other controllers (detector, cluster, namespace, dependencies, policies, services,
// FederatedResourceQuotas)
// stay with the elected leader, and every replica connects to every Push member.
type Sharding struct {
	// Shards is the number of shards; 0 or 1 is an unsharded manager.
	Shards int
	// Elector configures the shard Leases; Config, when set, is the REST config they are
	// written with (outside the manager's request budget, as leader election's is).
	Elector shard.ElectorOptions
	Config  *rest.Config
}

// DefaultOptions are the defaults of the manager's flags.
var DefaultOptions = Options{Failover: failover.DefaultOptions, Workers: 8, MemberQPS: 100, MemberBurst: 200, FailureThreshold: 3, MemberWorkers: memberqueue.DefaultWorkers, MemberWorkTimeout: memberqueue.DefaultTimeout,
	ProbeInterval: cluster.DefaultProbeInterval, StatusInterval: cluster.DefaultStatusInterval,
	FederatedHPASyncPeriod: federatedhpa.DefaultSyncPeriod}

func (o *Options) defaults() {
	d := DefaultOptions
	if o.Workers <= 0 {
		o.Workers = d.Workers
	}
	if o.MemberQPS <= 0 {
		o.MemberQPS = d.MemberQPS
	}
	if o.MemberBurst <= 0 {
		o.MemberBurst = d.MemberBurst
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = d.ProbeInterval
	}
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = d.FailureThreshold
	}
	if o.Failover == (failover.Options{}) {
		o.Failover = d.Failover
	}
}

// Leader election holds a Lease in the manager's namespace and records core Events about it.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Setup registers every reconciler with the manager and returns the member connection
// manager they share.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) (*member.Manager, error) {
	o.defaults()
	shards, err := setupShards(mgr, o.Sharding)
	if err != nil {
		return nil, err
	}
	// The interpreter is declared before the member manager, which consults its store of
	// customizations: the member caches trim the pod templates of built-in workloads, and a
	// kind a customization interprets on member objects is read whole from the member
	// instead (member.Options.Whole).
	interp := interpreter.Interpreter{}
	members := member.NewManager(mgr.GetScheme(), member.Options{
		QPS: o.MemberQPS, Burst: o.MemberBurst, FailureThreshold: o.FailureThreshold, ProbeInterval: o.ProbeInterval,
		Whole: func(gvk schema.GroupVersionKind) bool { return interp.ReadsMemberObjects(gvk) },
	})
	// Member connections (caches, probe goroutines) end with the manager.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		for _, name := range members.Names() {
			members.Disconnect(name)
		}
		return nil
	})); err != nil {
		return nil, err
	}
	// Customizations are loaded before anything interprets a template (LoadAll), and kept
	// current by their controller on every replica.
	var detectorRef *detector.Reconciler
	var workStatusRef *workstatus.WorkReconciler
	requeue := func(match func(schema.GroupKind) bool) {
		// Existing templates and Works of the kind are looked at again (leader only: a
		// replica that becomes leader looks at everything anyway).
		// Sharded, every replica looks at the Works of its own shards.
		if workStatusRef != nil && shards != nil {
			go workStatusRef.RequeueMatching(ctx, match)
		}
		select {
		case <-mgr.Elected():
		default:
			return
		}
		if detectorRef != nil {
			detectorRef.RequeueMatching(match)
		}
		if workStatusRef != nil && shards == nil {
			go workStatusRef.RequeueMatching(ctx, match)
		}
	}
	store, err := customizationcontroller.Setup(ctx, mgr, customizationcontroller.SetupOptions{NoBuiltins: o.NoBuiltinInterpreters, Changed: func(gk schema.GroupKind) {
		requeue(func(k schema.GroupKind) bool { return k == gk })
	}})
	if err != nil {
		return nil, err
	}
	// Interpreter webhooks (ResourceInterpreterWebhookConfigurations) come between the
	// customizations and the built-in customizations, as in Karmada.
	webhooks, err := customizationcontroller.SetupWebhooks(ctx, mgr, requeue, false)
	if err != nil {
		return nil, err
	}
	interp.Customizations = interpreter.Layers{store.Declared(), webhooks, store.Builtins()}
	if err := binding.SetupIndexes(ctx, mgr); err != nil {
		return nil, err
	}
	if err := schedulercontroller.SetupIndexes(ctx, mgr); err != nil {
		return nil, err
	}
	sched, err := scheduler.New(scheduler.Options{EnableEmptyWorkloadPropagation: o.EnableEmptyWorkloadPropagation,
		ExtraPlugins: o.SchedulerPlugins, Plugins: o.SchedulerProfile})
	if err != nil {
		return nil, err
	}
	if err := (&namespace.HoldReconciler{
		Client: mgr.GetClient(), HostControllers: append(slices.Clone(namespace.DefaultHostControllers), o.HoldControllers...),
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&namespace.HeldReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("namespace-controller")}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := dependencies.SetupIndexes(ctx, mgr); err != nil {
		return nil, err
	}
	deps := dependencies.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("dependencies-distributor"), interp)
	deps.SuccessEvents = o.RecordSuccessEvents
	if err := deps.SetupWithManager(mgr, o.Workers); err != nil {
		return nil, err
	}
	// Templates the detector reads whole are handed to the binding controller, which then
	// renders them without reading them again.
	templates := handoff.New(handoff.DefaultSize, handoff.DefaultTTL)
	// Templates nobody took are let go of even when no more come.
	if err := mgr.Add(manager.RunnableFunc(templates.Run)); err != nil {
		return nil, err
	}
	newRB := func() client.Object { return &workv1alpha2.ResourceBinding{} }
	newCRB := func() client.Object { return &workv1alpha2.ClusterResourceBinding{} }
	schedulers := map[string]*schedulercontroller.Reconciler{}
	held := ledger.New(o.SchedulerHoldTTL)
	for kind, nb := range map[string]func() client.Object{"ResourceBinding": newRB, "ClusterResourceBinding": newCRB} {
		schedulers[kind] = &schedulercontroller.Reconciler{
			Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("default-scheduler"), Scheduler: sched,
			SchedulerName: o.SchedulerName, NewBinding: nb, Shards: shards, Ledger: held,
		}
	}
	detectorRef = &detector.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("detector"), Interpreter: interp, Dependencies: deps,
		// New bindings are created scheduled when they can be (the scheduler's first
		// placement, without its spec write).
		Templates: templates, Placer: schedulers["ResourceBinding"],
	}
	if err := detectorRef.SetupWithManager(mgr, detector.Options{Workers: o.Workers}); err != nil {
		return nil, err
	}
	// Progressive rollouts: the rollout controller plans each selected template's Rollout
	// (leader only); the binding controller renders each cluster's Work from it.
	if err := (&rolloutcontroller.Reconciler{Interpreter: interp}).SetupWithManager(mgr, rolloutcontroller.DefaultWorkers); err != nil {
		return nil, err
	}
	gate := &rolloutcontroller.Gate{Client: mgr.GetClient(), Interpreter: interp}
	for _, nb := range []func() client.Object{newRB, newCRB} {
		if err := (&binding.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("binding-controller"),
			Interpreter: interp, NewBinding: nb, Templates: templates, Shards: shards, Rollouts: gate,
			SuccessEvents: o.RecordSuccessEvents,
		}).SetupWithManager(mgr, o.Workers); err != nil {
			return nil, err
		}
		if err := schedulers[bindings.Kind(nb())].SetupWithManager(mgr, o.Workers); err != nil {
			return nil, err
		}
		fo := o.Failover
		fo.Workers = o.Workers
		if err := (&failover.Reconciler{
			Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("failover-controller"), Interpreter: interp,
			NewBinding: nb, Options: fo, Shards: shards,
		}).SetupWithManager(mgr); err != nil {
			return nil, err
		}
		if err := (&workstatus.AggregateReconciler{
			Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("binding-status-controller"), NewBinding: nb,
			Interpreter: interp, APIReader: mgr.GetAPIReader(), Shards: shards, SuccessEvents: o.RecordSuccessEvents,
			SchedulerName: o.SchedulerName,
		}).SetupWithManager(mgr, o.Workers); err != nil {
			return nil, err
		}
	}
	if o.Descheduler.Enabled {
		if err := (&descheduler.Reconciler{
			Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("karmada-descheduler"), Mover: schedulers["ResourceBinding"],
			Threshold: o.Descheduler.Threshold, SchedulerName: o.SchedulerName, Shards: shards,
		}).SetupWithManager(mgr, o.Workers); err != nil {
			return nil, err
		}
	}
	if err := (&rebalancer.Reconciler{}).SetupWithManager(mgr, o.Workers); err != nil {
		return nil, err
	}
	hostID, err := hostclient.HostID(ctx, mgr.GetAPIReader())
	if err != nil {
		return nil, err
	}
	clusters := &cluster.Reconciler{Members: members, HostID: hostID}
	if err := clusters.SetupWithManager(mgr, cluster.Options{
		ProbeInterval: o.ProbeInterval, StatusInterval: o.StatusInterval, Workers: o.Workers, NoExecuteTaints: o.NoExecuteTaints,
		ConnectEveryReplica: shards != nil,
	}); err != nil {
		return nil, err
	}
	// Cluster API Clusters labelled for the fleet join it by themselves (leader only; when
	// Cluster API is installed on the host).
	if !o.NoClusterAPIJoin {
		if _, err := (&capijoin.Reconciler{}).SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	// Every member is published as a ClusterProfile (leader only, as the cluster controller).
	profiles := &clusterprofile.Reconciler{Options: o.ClusterProfiles}
	if err := profiles.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// Opt-in: each binding's placement as PlacementDecisions (leader only).
	if o.PlacementDecisions {
		for _, nb := range []func() client.Object{newRB, newCRB} {
			if err := (&placementdecision.Reconciler{NewBinding: nb, ProfileNamespace: profiles.Options.Namespace, SuccessEvents: o.RecordSuccessEvents}).SetupWithManager(mgr); err != nil {
				return nil, err
			}
		}
	}
	// Fields accepted but not acted on yet get a Warning on their policy or Cluster.
	if err := notacted.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// ClusterTaintPolicies taint and untaint Clusters on their conditions.
	if err := (&clustertaint.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(clustertaint.ControllerName),
	}).SetupWithManager(mgr, clustertaint.DefaultWorkers); err != nil {
		return nil, err
	}
	// FederatedResourceQuotas write a ResourceQuota Work per static assignment (the
	// execution controller applies them) and aggregate the members' usage; leader only.
	// CronFederatedHPAs set fleet replicas the detector gives their targets' bindings.
	if err := (&cronfederatedhpa.Reconciler{Interpreter: interp}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// FederatedHPAs compute replicas from the members' metrics; the detector gives them to
	// their targets' bindings (leader only; member reads on the members' queues).
	if err := (&federatedhpa.Reconciler{Members: members, SyncPeriod: o.FederatedHPASyncPeriod,
		MemberWorkTimeout: o.MemberWorkTimeout}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&federatedresourcequota.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(federatedresourcequota.ControllerName),
	}).SetupWithManager(mgr, federatedresourcequota.DefaultWorkers); err != nil {
		return nil, err
	}
	if err := (&execution.Reconciler{
		Client: mgr.GetClient(), Members: members, Recorder: mgr.GetEventRecorder("execution-controller"), Interpreter: interp,
		HostID: hostID, MemberWorkers: o.MemberWorkers, MemberWorkTimeout: o.MemberWorkTimeout, KindServed: clusters.RefreshStatus, Shards: shards,
	}).SetupWithManager(mgr, o.Workers); err != nil {
		return nil, err
	}
	workStatusRef = &workstatus.WorkReconciler{Client: mgr.GetClient(), Members: members, Interpreter: interp, Shards: shards}
	if err := workStatusRef.SetupWithManager(mgr, o.Workers); err != nil {
		return nil, err
	}
	if err := (&mcscontroller.Reconciler{
		Client: mgr.GetClient(), Members: members, Recorder: mgr.GetEventRecorder(mcscontroller.ControllerName), MemberWorkers: o.MemberWorkers,
		MemberWorkTimeout: o.MemberWorkTimeout, KindServed: clusters.RefreshStatus,
	}).SetupWithManager(mgr, o.Workers); err != nil {
		return nil, err
	}
	return members, nil
}

// setupShards returns this replica's shard Set and adds the Elector that keeps its Leases,
// or returns nil for an unsharded manager.
func setupShards(mgr ctrl.Manager, o Sharding) (*shard.Set, error) {
	if o.Shards <= 1 {
		return nil, nil
	}
	cfg := o.Config
	if cfg == nil {
		cfg = mgr.GetConfig()
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	set := shard.NewSet(o.Shards)
	elector, err := shard.NewElector(set, cs.CoordinationV1(), o.Elector)
	if err != nil {
		return nil, err
	}
	return set, mgr.Add(elector)
}
