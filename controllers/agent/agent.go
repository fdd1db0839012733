// Package agent is the Pull mode agent: it runs in a member cluster, connects out to the
// host with a credential that reaches only its own execution namespace and its own Cluster
// (internal/agentauth), and does there what the host's manager does for a Push member:
//
//   - applies the Works of karmada-es-<cluster> to the member and reports their status, with
//     the very reconcilers the manager runs for Push members (controllers/execution and
//     controllers/workstatus: server-side apply, conflicts, drift, retain, namespaces), with
//     the host's ResourceInterpreterCustomizations loaded and kept current as the manager
//     does (controllers/customization, read-only here: the manager reports on them), so
//     that retention, status reflection and health read the same on Push and Pull members;
//   - renews a heartbeat Lease in the execution namespace, from which the host's cluster
//     controller tells whether the agent is alive;
//   - collects its Cluster's status with the same code as the cluster controller
//     (clusterstatus.Collect) and writes it;
//   - rotates its host credential before it expires.
//
// Leader election runs in the member (Lease flotilla-system/flotilla-agent), so several
// replicas may run. The agent reads its host credential from the member Secret
// flotilla-system/flotilla-agent-host, which `kubectl flotilla register` writes.
package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	customizationcontroller "github.com/flotilla-io/flotilla/controllers/customization"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/controllers/workstatus"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/cachetrim"
	"github.com/flotilla-io/flotilla/internal/eventnote"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/memberqueue"
	"github.com/flotilla-io/flotilla/internal/memlimit"
)

// Defaults of Options.
const (
	// DefaultHeartbeatInterval is how often the agent renews its Lease and probes its member,
	// as often as the host probes a Push member.
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultFailureThreshold is how many heartbeats may be missed before the host reports
	// the member Unknown, and how many failed probes make the member not ready, as for Push.
	DefaultFailureThreshold = 3
	// DefaultStatusInterval is how often the member's version, APIs and capacity are
	// collected.
	DefaultStatusInterval = 30 * time.Second
	// DefaultTokenExpiration is the lifetime of the credentials the agent asks for when it
	// rotates its own.
	DefaultTokenExpiration = 7 * 24 * time.Hour
	// DefaultCredentialCheckInterval is how often the agent looks at its credential Secret.
	DefaultCredentialCheckInterval = 30 * time.Second
)

// Options configure the agent.
type Options struct {
	// Member is the REST config of the member the agent runs in.
	Member *rest.Config
	// HostSecret is the member Secret with the host credential; default
	// flotilla-system/flotilla-agent-host.
	HostSecret types.NamespacedName
	// TokenDir is where the agent keeps its current host token for its clients to read;
	// default a new temporary directory.
	TokenDir string
	// HeartbeatInterval, FailureThreshold and StatusInterval: see the defaults.
	HeartbeatInterval time.Duration
	FailureThreshold  int
	StatusInterval    time.Duration
	// TokenExpiration is the lifetime asked for a rotated credential.
	TokenExpiration time.Duration
	// CredentialCheckInterval is how often the credential Secret is read (a rotation by
	// another replica, a new registration) and the credential's age checked.
	CredentialCheckInterval time.Duration
	// Workers reconcile Works; MemberWorkers apply them to the member.
	Workers, MemberWorkers int
	// MemberQPS and MemberBurst limit the agent's member client.
	MemberQPS   float32
	MemberBurst int
	// HostQPS and HostBurst limit the agent's host client.
	HostQPS   float32
	HostBurst int
	// LeaderElection elects one active replica through a Lease in the member.
	LeaderElection bool
	// MetricsAddr and ProbeAddr serve metrics and health probes; "0" turns either off.
	MetricsAddr, ProbeAddr string
	// Identity names this agent replica in its heartbeat Lease; default the host name.
	Identity string
	// IdleGCPercent is GOGC while the agent is idle (memlimit.IdleGC); 0 leaves the
	// garbage collector alone, as does a set $GOGC.
	IdleGCPercent int
	// NoBuiltinInterpreters leaves out the built-in customizations of third-party kinds
	// (internal/customization/builtin), as the manager's --builtin-interpreters=false does;
	// give both the same setting, so that Push and Pull members are read alike.
	NoBuiltinInterpreters bool
}

func (o *Options) defaults() {
	if o.HostSecret.Name == "" {
		o.HostSecret = types.NamespacedName{Namespace: agentauth.SystemNamespace, Name: agentauth.HostSecret}
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = DefaultFailureThreshold
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = DefaultStatusInterval
	}
	if o.TokenExpiration <= 0 {
		o.TokenExpiration = DefaultTokenExpiration
	}
	if o.CredentialCheckInterval <= 0 {
		o.CredentialCheckInterval = DefaultCredentialCheckInterval
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.MemberWorkers <= 0 {
		o.MemberWorkers = memberqueue.DefaultWorkers
	}
	if o.MemberQPS <= 0 {
		o.MemberQPS, o.MemberBurst = 100, 200
	}
	if o.HostQPS <= 0 {
		o.HostQPS, o.HostBurst = 50, 100
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = "0"
	}
	if o.Identity == "" {
		o.Identity, _ = os.Hostname()
	}
}

// Run runs the agent until ctx ends.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	log := ctrl.LoggerFrom(ctx).WithName("agent")
	ctx = ctrl.LoggerInto(ctx, log)
	scheme := flotillascheme.New()
	memberCfg := rest.CopyConfig(o.Member)
	memberCfg.QPS, memberCfg.Burst = o.MemberQPS, o.MemberBurst
	memberClient, err := client.New(memberCfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("member client: %w", err)
	}

	// The host credential, and a file its clients read it from (rotation replaces it).
	var cred *Credential
	if err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := ReadCredential(ctx, memberClient, o.HostSecret)
		if err != nil {
			log.Info("Waiting for the host credential", "Secret", o.HostSecret, "error", err.Error())
			return false, nil
		}
		cred = c
		return true, nil
	}); err != nil {
		return err
	}
	if o.TokenDir == "" {
		if o.TokenDir, err = os.MkdirTemp("", "flotilla-agent-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.TokenDir)
	}
	tokenFile := filepath.Join(o.TokenDir, "token")
	if err := writeToken(tokenFile, cred.Token); err != nil {
		return err
	}
	hostCfg := cred.RESTConfig(tokenFile)
	hostCfg.QPS, hostCfg.Burst = o.HostQPS, o.HostBurst
	name := cred.Cluster
	ns := wellknown.ExecutionNamespace(name)
	log = log.WithValues("Cluster", name)
	ctx = ctrl.LoggerInto(ctx, log)

	rot := &rotator{member: memberClient, secret: o.HostSecret, tokenFile: tokenFile, cluster: name,
		interval: o.CredentialCheckInterval, expiration: o.TokenExpiration, current: cred}
	if err := awaitAcceptedCredential(ctx, hostCfg, rot); err != nil {
		return err
	}

	lease := time.Duration(o.FailureThreshold) * o.HeartbeatInterval
	renew := lease * 2 / 3
	retry := o.HeartbeatInterval / 2
	mgr, err := ctrl.NewManager(hostCfg, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			DefaultTransform: cachetrim.HostObject,
			// Its own execution namespace, its own Cluster, and the customizations (cluster
			// scoped, every one of them applies): all the agent may read.
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			ByObject: map[client.Object]cache.ByObject{
				&clusterv1alpha1.Cluster{}:                         {Field: fields.OneTermEqualSelector("metadata.name", name)},
				&configv1alpha1.ResourceInterpreterCustomization{}: {},
			},
		},
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionConfig:          memberCfg,
		LeaderElectionNamespace:       agentauth.SystemNamespace,
		LeaderElectionID:              agentauth.LeaderElectionID,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptrTo(max(lease, 15*time.Second)),
		RenewDeadline:                 ptrTo(max(renew, 10*time.Second)),
		RetryPeriod:                   ptrTo(max(retry, 2*time.Second)),
		Logger:                        log,
	})
	if err != nil {
		return fmt.Errorf("host manager: %w", err)
	}
	mgr = eventnote.Manager(mgr)
	rot.host, rot.elected = mgr.GetClient(), mgr.Elected()
	hostID, err := waitForHostID(ctx, mgr.GetAPIReader(), name)
	if err != nil {
		return err
	}

	// The customizations are loaded before the member connection, whose cache reads whole
	// the kinds they interpret on member objects, as the manager's member caches do.
	var workStatus *workstatus.WorkReconciler
	customizations, err := customizationcontroller.Setup(ctx, mgr, customizationcontroller.SetupOptions{ReadOnly: true, NoBuiltins: o.NoBuiltinInterpreters, Changed: func(gk schema.GroupKind) {
		// The Works of the kind are reflected again, by the elected replica.
		select {
		case <-mgr.Elected():
		default:
			return
		}
		if workStatus != nil {
			go workStatus.RequeueKind(ctx, gk)
		}
	}})
	if err != nil {
		return err
	}
	// Interpreter webhooks too, between customizations and built-ins as in the manager: the
	// agent calls them for its member's objects (retention, status, health).
	webhooks, err := customizationcontroller.SetupWebhooks(ctx, mgr, func(match func(schema.GroupKind) bool) {
		select {
		case <-mgr.Elected():
		default:
			return
		}
		if workStatus != nil {
			go workStatus.RequeueMatching(ctx, match)
		}
	}, true)
	if err != nil {
		return err
	}
	interp := interpreter.Interpreter{Customizations: interpreter.Layers{customizations.Declared(), webhooks, customizations.Builtins()}}
	members := member.NewManager(scheme, member.Options{
		QPS: o.MemberQPS, Burst: o.MemberBurst, FailureThreshold: o.FailureThreshold, ProbeInterval: o.HeartbeatInterval,
		Whole: interp.ReadsMemberObjects,
	})
	if _, err := members.ConnectConfig(ctx, name, memberCfg); err != nil {
		return fmt.Errorf("connect to the member: %w", err)
	}
	defer members.Disconnect(name)

	hb := &heartbeat{
		host: mgr.GetClient(), reader: mgr.GetAPIReader(), members: members, name: name, identity: o.Identity,
		interval: o.HeartbeatInterval, leaseDuration: lease, statusInterval: o.StatusInterval,
		refresh: make(chan struct{}, 1), collectedOnce: make(chan struct{}),
	}
	if err := (&execution.Reconciler{
		Client: mgr.GetClient(), Members: members, Recorder: mgr.GetEventRecorder("flotilla-agent"), Interpreter: interp,
		HostID: hostID, MemberWorkers: o.MemberWorkers, KindServed: func(string) { hb.Refresh() }, Agent: name,
	}).SetupWithManager(mgr, o.Workers); err != nil {
		return err
	}
	workStatus = &workstatus.WorkReconciler{Client: mgr.GetClient(), Members: members, Interpreter: interp}
	if err := workStatus.SetupWithManager(mgr, o.Workers); err != nil {
		return err
	}
	if err := mgr.Add(hb); err != nil {
		return err
	}
	if o.IdleGCPercent > 0 && os.Getenv("GOGC") == "" {
		if err := mgr.Add(&memlimit.IdleGC{Percent: o.IdleGCPercent, Log: ctrl.Log.WithName("idle-gc")}); err != nil {
			return err
		}
	}
	if err := mgr.Add(rot); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("Starting the Pull agent", "host", hostCfg.Host, "executionNamespace", ns, "leaderElection", o.LeaderElection)
	return mgr.Start(ctx)
}

func ptrTo[T any](v T) *T { return &v }

// awaitAcceptedCredential waits until the host accepts the agent's credential. While it
// rejects it (401: the agent was offline past its expiry, say), it follows the credential
// Secret, which `kubectl flotilla register` run again rewrites, and says once per credential
// what to run. Other errors (the host is down) are left to the manager.
func awaitAcceptedCredential(ctx context.Context, hostCfg *rest.Config, rot *rotator) error {
	var told string
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		// The token itself, not the token file: a client reads that at most once a minute.
		cfg := rest.CopyConfig(hostCfg)
		tried := rot.current
		cfg.BearerToken, cfg.BearerTokenFile = tried.Token, ""
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return false, fmt.Errorf("host client: %w", err)
		}
		_, err = kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) {
			return true, nil
		}
		cred, ferr := rot.follow(ctx)
		switch {
		case ferr != nil:
			ctrl.LoggerFrom(ctx).Error(ferr, "Cannot read the host credential")
		case cred.Token == tried.Token && cred.Token != told:
			told = cred.Token
			ctrl.LoggerFrom(ctx).Error(Rejected(cred, err), "Waiting for a new host credential")
		}
		return false, nil
	})
}

// waitForHostID reads the host's id that the host's cluster controller records on the
// Cluster, waiting for it.
func waitForHostID(ctx context.Context, r client.Reader, name string) (string, error) {
	var id string
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		c := &clusterv1alpha1.Cluster{}
		if err := r.Get(ctx, types.NamespacedName{Name: name}, c); err != nil {
			ctrl.LoggerFrom(ctx).Info("Waiting for the Cluster in the host", "error", err.Error())
			return false, nil
		}
		if c.Spec.SyncMode != clusterv1alpha1.Pull {
			return false, fmt.Errorf("cluster %s is in %s mode in the host, not Pull", name, c.Spec.SyncMode)
		}
		id = c.Annotations[agentauth.HostIDAnnotation]
		return id != "", nil
	})
	return id, err
}

var _ manager.Runnable = (*heartbeat)(nil)

// errNoCredential says the credential Secret is incomplete.
var errNoCredential = errors.New("the host credential Secret is incomplete")
