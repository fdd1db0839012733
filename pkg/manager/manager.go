/*
Copyright 2026 The Flotilla Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package manager is the Flotilla manager's command: every reconciler in one
// controller-runtime manager against the host apiserver. The repository's main.go is
// manager.Main(); a binary of your own can add scheduler plugins to it without forking:
//
//	func main() {
//		manager.Main(manager.WithSchedulerPlugins(costaware.New()))
//	}
//
// The plugins implement the interfaces of pkg/scheduler/framework; they are enabled, disabled
// and weighted with the other plugins by --scheduler-plugins and --scheduler-config
// (docs/guides/scheduling.md). This package only wires flags, the manager and the
// reconcilers together; the logic lives in controllers/ and internal/.
package manager

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/controllers"
	"github.com/flotilla-io/flotilla/internal/descheduler"
	"github.com/flotilla-io/flotilla/internal/eventnote"
	"github.com/flotilla-io/flotilla/internal/hostclient"
	"github.com/flotilla-io/flotilla/internal/hostguard"
	"github.com/flotilla-io/flotilla/internal/hostmetrics"
	"github.com/flotilla-io/flotilla/internal/memlimit"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/pkg/scheduler/config"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// options are the manager's flags. docs/operations.md has the table of them.
type options struct {
	metricsAddr          string
	probeAddr            string
	pprofAddr            string
	leaderElect          bool
	leaderElectionNS     string
	leaderElectionID     string
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration
	kubeAPIQPS           float64
	kubeAPIBurst         int
	gracefulShutdownTime time.Duration
	controllers          controllers.Options
	memberQPS            float64
	memoryLimit          string
	idleGCPercent        int
	shards               int
	shardLeasePrefix     string
	schedulerConfigSet   bool
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz probes bind to.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "Address Go's /debug/pprof/ profiles bind to, e.g. 127.0.0.1:6060; \"0\" (the default) disables them.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles at a time. On in config/manager.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease; defaults to the pod's namespace (flotilla-system out of cluster).")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "flotilla-manager.flotilla.io", "Name of the leader election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a leader's Lease lasts without renewal.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps retrying to renew before it gives up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease.")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", hostclient.DefaultQPS, "Client-side limit of the manager's requests per second to the host apiserver, all kinds together; 0 or less leaves the pace to the host's API Priority and Fairness alone, which also applies.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", hostclient.DefaultBurst, "Client-side burst of requests to the host apiserver, all kinds together.")
	fs.StringVar(&o.memoryLimit, "memory-limit", "", memlimit.FlagUsage("config/manager"))
	fs.IntVar(&o.idleGCPercent, "idle-gc-percent", memlimit.DefaultIdlePercent, "GOGC while the manager is idle (it allocated at most half its live heap in the last minute), "+
		"so that it gives back the memory a burst grew its heap to; Go's 100 is put back at the first burst. 0 turns it off; so does setting $GOGC.")
	fs.IntVar(&o.shards, "shards", 1, "Shards the binding and Work controllers' work is split into, each held by one replica through a Lease of its own; "+
		"1 (the default) is an unsharded manager, where the leader does everything. Run as many replicas as you like (at most as many do work); see docs/operations.md, Sharded managers.")
	fs.StringVar(&o.shardLeasePrefix, "shard-lease-prefix", "flotilla-manager", "Prefix of the shard Leases (<prefix>-shard-<n>) and replica presence Leases, in the leader election namespace.")
	fs.DurationVar(&o.gracefulShutdownTime, "graceful-shutdown-timeout", 30*time.Second, "How long reconcilers get to finish on shutdown.")
	d := controllers.DefaultOptions
	fs.IntVar(&o.controllers.Workers, "concurrent-reconciles", d.Workers, "Concurrent reconciles per controller.")
	fs.Float64Var(&o.memberQPS, "member-api-qps", float64(d.MemberQPS), "Client-side QPS limit towards each member cluster.")
	fs.IntVar(&o.controllers.MemberBurst, "member-api-burst", d.MemberBurst, "Client-side burst towards each member cluster.")
	fs.IntVar(&o.controllers.MemberWorkers, "member-workers", d.MemberWorkers, "Works of one member cluster applied at once, on workers of that member's own.")
	fs.DurationVar(&o.controllers.MemberWorkTimeout, "member-work-timeout", d.MemberWorkTimeout, "Bound on the work for one key on a member's workers (one Work's apply, one service's export); it is then retried with backoff.")
	fs.DurationVar(&o.controllers.ProbeInterval, "cluster-probe-interval", d.ProbeInterval, "How often member clusters are probed.")
	fs.DurationVar(&o.controllers.StatusInterval, "cluster-status-interval", d.StatusInterval, "How often a member's version, APIs, nodes and capacity are collected (also at once when it connects).")
	fs.DurationVar(&o.controllers.FederatedHPASyncPeriod, "federated-hpa-sync-period", d.FederatedHPASyncPeriod, "How often each FederatedHPA reads its members' metrics and computes its replicas (the HPA controller's sync period).")
	fs.IntVar(&o.controllers.FailureThreshold, "cluster-failure-threshold", d.FailureThreshold, "Failed probes in a row before a member is NotReady.")
	fs.BoolVar(&o.controllers.EnableEmptyWorkloadPropagation, "enable-empty-workload-propagation", false, "Propagate workloads to clusters that were divided 0 replicas.")
	fs.Func("hold-controllers", "Comma-separated user names of host controllers (operators, ingress or load balancer controllers) whose writes to templates the host hold also denies, besides kube-controller-manager's and the other defaults (see docs/concepts.md, The host hold).", func(v string) error {
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				o.controllers.HoldControllers = append(o.controllers.HoldControllers, id)
			}
		}
		return nil
	})
	fs.BoolVar(&o.controllers.NoExecuteTaints, "enable-no-execute-taint-eviction", false,
		"Taint not-ready and unreachable members NoExecute as well as NoSchedule, so that workloads leave them once their tolerations run out (Karmada's flag of the same name; off by default, as there).")
	fs.Int64Var(&o.controllers.Failover.NotReadyTolerationSeconds, "default-not-ready-toleration-seconds", d.Failover.NotReadyTolerationSeconds,
		"How long a placement that says nothing about it tolerates cluster.karmada.io/not-ready:NoExecute; negative: not at all.")
	fs.Int64Var(&o.controllers.Failover.UnreachableTolerationSeconds, "default-unreachable-toleration-seconds", d.Failover.UnreachableTolerationSeconds,
		"How long a placement that says nothing about it tolerates cluster.karmada.io/unreachable:NoExecute; negative: not at all.")
	fs.DurationVar(&o.controllers.Failover.GracePeriod, "graceful-eviction-timeout", d.Failover.GracePeriod,
		"How long a cluster a workload was evicted from keeps it while the new placement is not healthy yet (a task's gracePeriodSeconds wins).")
	fs.StringVar(&o.controllers.SchedulerName, "scheduler-name", "default-scheduler", "Bindings naming another scheduler are left to it.")
	fs.Func("scheduler-plugins", "Scheduler plugins to run: \"*\" (all, the default), \"*,-Name\" all but one, \"A,B\" only those, \"Name=3\" a score plugin weighted 3 (docs/guides/scheduling.md). Not with --scheduler-config.",
		func(v string) error {
			if o.schedulerConfigSet {
				return fmt.Errorf("--scheduler-plugins and --scheduler-config are exclusive")
			}
			p, err := config.ParseFlag(v)
			o.controllers.SchedulerProfile, o.schedulerConfigSet = p, true
			return err
		})
	fs.Func("scheduler-config", "A SchedulerConfiguration file (config.flotilla.io/v1alpha1) enabling, disabling and weighing the scheduler's plugins (docs/guides/scheduling.md). Not with --scheduler-plugins.",
		func(path string) error {
			if o.schedulerConfigSet {
				return fmt.Errorf("--scheduler-plugins and --scheduler-config are exclusive")
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			p, err := config.Load(data)
			o.controllers.SchedulerProfile, o.schedulerConfigSet = p, true
			return err
		})
	fs.DurationVar(&o.controllers.SchedulerHoldTTL, "scheduler-hold-ttl", ledger.DefaultTTL,
		"How long a placement its member has not reported yet is subtracted from the cluster's estimated room, at most (docs/guides/scheduling.md).")
	fs.BoolFunc("builtin-interpreters", "Interpret the third-party kinds Flotilla ships customizations for (OpenKruise, Argo, Flux, Kubeflow, Volcano, Flink, Ray, Spark, Kyverno; "+
		"see docs/builtin-interpreters.md); a ResourceInterpreterCustomization of the kind wins for the operations it scripts. On by default; =false turns them off.", func(v string) error {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		o.controllers.NoBuiltinInterpreters = !on
		return nil
	})
	fs.BoolVar(&o.controllers.Descheduler.Enabled, "descheduler", false,
		"Move replicas that stay unschedulable in a member (Pods Pending, unschedulable, for --descheduler-unschedulable-threshold) of Divided dynamic-weight or Aggregated Deployments and ReplicaSets "+
			"to clusters with room, never below what runs (Karmada's karmada-descheduler; off by default, as that is a component of its own; docs/guides/scheduling.md).")
	fs.DurationVar(&o.controllers.Descheduler.Threshold, "descheduler-unschedulable-threshold", descheduler.DefaultThreshold,
		"How long replicas stay unschedulable in a member before the descheduler moves them (Karmada's --unschedulable-threshold).")
	o.controllers.ClusterProfiles.BindFlags(fs)
	fs.BoolFunc("cluster-api-join", "Join Cluster API Clusters labelled flotilla.io/join=true once their control plane is initialized, and unjoin them when deleted (default true; needs Cluster API's CRDs on the host when the manager starts; see docs/cluster-inventory.md). --cluster-api-join=false turns it off.", func(v string) error {
		switch v {
		case "true":
			o.controllers.NoClusterAPIJoin = false
		case "false":
			o.controllers.NoClusterAPIJoin = true
		default:
			return fmt.Errorf("want true or false, got %q", v)
		}
		return nil
	})
	fs.BoolVar(&o.controllers.RecordSuccessEvents, "record-success-events", false,
		"Also record the Normal events that only say a propagation went as asked (AggregateStatusSucceed when a binding is first FullyApplied, SyncWorkSucceed, "+
			"SyncScheduleResultToDependenciesSucceed, PlacementDecisionPublished): a write to the host per template each. Failures and state changes "+
			"(a template changing policy, a new placement, a recovery, an eviction, a cluster's health) are always recorded.")
	fs.BoolVar(&o.controllers.PlacementDecisions, "placement-decisions", false,
		"Publish where each binding is scheduled as PlacementDecisions (multicluster.x-k8s.io, KEP-5313): in the ResourceBinding's namespace, or the ClusterProfiles' for a ClusterResourceBinding (docs/cluster-inventory.md).")
}

// Option changes what Main builds.
type Option func(*options)

// WithSchedulerPlugins makes plugins available to the scheduler beside its default ones.
// They are enabled unless --scheduler-plugins or --scheduler-config say otherwise; their
// names must be unique.
func WithSchedulerPlugins(plugins ...framework.Plugin) Option {
	return func(o *options) { o.controllers.SchedulerPlugins = append(o.controllers.SchedulerPlugins, plugins...) }
}

// Check parses args as Main parses the command line and checks what can be checked without
// a cluster: the scheduler's plugins (their names, weights and the configuration file). A
// binary built with extra plugins tests its wiring with it.
func Check(args []string, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.bind(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return o.checkScheduler()
}

// checkScheduler builds the scheduler once, so that a bad plugin flag fails at start.
func (o *options) checkScheduler() error {
	if o.controllers.Descheduler.Threshold <= 0 {
		return fmt.Errorf("--descheduler-unschedulable-threshold: must be positive, got %s", o.controllers.Descheduler.Threshold)
	}
	_, err := scheduler.New(scheduler.Options{ExtraPlugins: o.controllers.SchedulerPlugins, Plugins: o.controllers.SchedulerProfile})
	if err != nil {
		return fmt.Errorf("scheduler plugins: %w", err)
	}
	return nil
}

// Main parses the command line, runs the manager until it is signalled, and exits the
// process: 1 on any error.
func Main(opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	o.bind(flag.CommandLine)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if err := o.checkScheduler(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// hostmetrics.Logger lets the host request counter name the controller of each request.
	ctrl.SetLogger(hostmetrics.Logger(zap.New(zap.UseFlagOptions(&zapOpts))))
	log := ctrl.Log.WithName("setup")

	limit, from, err := memlimit.Set(o.memoryLimit, os.Getenv)
	if err != nil {
		log.Error(err, "Bad memory limit")
		os.Exit(1)
	}
	if limit > 0 {
		log.Info("Go soft memory limit set", "bytes", limit, "from", from)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Cannot load a kubeconfig for the host cluster")
		os.Exit(1)
	}
	if err := run(cfg, o); err != nil {
		log.Error(err, "Manager exited with an error")
		os.Exit(1)
	}
}

func run(cfg *rest.Config, o options) error {
	log := ctrl.Log.WithName("setup")
	ctx := ctrl.SetupSignalHandler()
	hostmetrics.Instrument(cfg)
	// One budget for every request to the host; leader election outside it.
	leaderElectionCfg := hostclient.Configure(cfg, o.kubeAPIQPS, o.kubeAPIBurst)
	// How long requests wait on the client-side limiters, and how long they take: what
	// --kube-api-qps and --member-api-qps cost (the bench prints them).
	metrics.RegisterRESTClientMetrics(metrics.MetricRateLimiterLatency, metrics.MetricRequestLatency)

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  flotillascheme.New(),
		Cache:                   controllers.CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionConfig:    leaderElectionCfg,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: leaderElectionNamespace(o.leaderElectionNS),
		LeaseDuration:           &o.leaseDuration,
		RenewDeadline:           &o.renewDeadline,
		RetryPeriod:             &o.retryPeriod,
		// The new leader starts without waiting for the old one's process to exit.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &o.gracefulShutdownTime,
	})
	if err != nil {
		return err
	}
	// Event notes longer than the events API accepts are shortened, not dropped.
	mgr = eventnote.Manager(mgr)

	o.controllers.MemberQPS = float32(o.memberQPS)
	switch {
	case o.shards < 1:
		return fmt.Errorf("--shards=%d: want 1 (unsharded) or more", o.shards)
	case o.shards > 1 && !o.leaderElect:
		return fmt.Errorf("--shards=%d needs --leader-elect: the detector and the cluster-wide controllers run on the elected leader only", o.shards)
	}
	if o.shards > 1 {
		id, err := replicaIdentity()
		if err != nil {
			return err
		}
		ns := leaderElectionNamespace(o.leaderElectionNS)
		if ns == "" {
			if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
				ns = strings.TrimSpace(string(b))
			}
		}
		o.controllers.Sharding = controllers.Sharding{Shards: o.shards, Config: leaderElectionCfg, Elector: shard.ElectorOptions{
			Namespace: ns, Group: o.shardLeasePrefix, Identity: id,
			LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod,
		}}
		log.Info("Sharded manager", "shards", o.shards, "identity", id)
	}
	if _, err := controllers.Setup(ctx, mgr, o.controllers); err != nil {
		return err
	}
	// The guard ships with kustomize and Helm; where it did not (an OLM bundle cannot carry
	// admission policies), the manager creates it for its own ServiceAccount, once.
	if err := mgr.Add(&hostguard.Ensurer{Client: mgr.GetClient()}); err != nil {
		return err
	}
	switch {
	case o.idleGCPercent <= 0:
	case o.idleGCPercent >= 100:
		return fmt.Errorf("--idle-gc-percent=%d: want less than Go's default GOGC, 100, or 0 to turn it off", o.idleGCPercent)
	case os.Getenv("GOGC") != "":
		log.Info("$GOGC is set: the garbage collector's goal is left as it says when idle too")
	default:
		if err := mgr.Add(&memlimit.IdleGC{Percent: o.idleGCPercent, Log: ctrl.Log.WithName("idle-gc")}); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}

	log.Info("Starting manager", "leaderElection", o.leaderElect)
	return mgr.Start(ctx)
}

// replicaIdentity names this replica among the shard holders: its host name (the pod's
// name) and a random suffix, so a restarted process is a new holder.
func replicaIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// leaderElectionNamespace returns the namespace of the leader election Lease. In cluster,
// controller-runtime reads the pod's namespace itself; out of cluster it has none, so we
// default to flotilla-system.
func leaderElectionNamespace(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return ""
	}
	return "flotilla-system"
}
