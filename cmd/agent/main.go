// Command agent is Flotilla's Pull mode agent. It runs in a member cluster and pulls that
// cluster's Works from the host (controllers/agent). `kubectl flotilla register` installs it
// and writes its host credential; run it by hand with --kubeconfig for a member out of
// cluster.
package main

import (
	"flag"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flotilla-io/flotilla/controllers/agent"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/memlimit"
)

func main() {
	var o agent.Options
	secret := agentauth.SystemNamespace + "/" + agentauth.HostSecret
	flag.StringVar(&secret, "host-secret", secret, "NAMESPACE/NAME of the member Secret with the agent's host credential (written by `kubectl flotilla register`).")
	flag.StringVar(&o.TokenDir, "token-dir", "", "Directory for the agent's current host token (default: a new temporary directory).")
	flag.DurationVar(&o.HeartbeatInterval, "heartbeat-interval", agent.DefaultHeartbeatInterval, "How often the agent renews its Lease in the host and probes the member.")
	flag.IntVar(&o.FailureThreshold, "failure-threshold", agent.DefaultFailureThreshold, "Missed heartbeats before the host reports the member Unknown; failed probes before the member is reported not ready.")
	flag.DurationVar(&o.StatusInterval, "cluster-status-interval", agent.DefaultStatusInterval, "How often the member's version, APIs, nodes and resource summary are collected.")
	flag.DurationVar(&o.TokenExpiration, "token-expiration", agent.DefaultTokenExpiration, "Lifetime of the host credential the agent asks for when it rotates its own (at four fifths of the old one's lifetime).")
	flag.DurationVar(&o.CredentialCheckInterval, "credential-check-interval", agent.DefaultCredentialCheckInterval, "How often the credential Secret is read and the credential's age checked.")
	flag.IntVar(&o.Workers, "workers", 4, "Concurrent reconciles per controller.")
	flag.IntVar(&o.MemberWorkers, "member-workers", 0, "How many Works are applied to the member at once (default as the manager's).")
	flag.BoolVar(&o.LeaderElection, "leader-elect", true, "Elect one active replica through a Lease in the member (flotilla-system/flotilla-agent).")
	flag.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "Address of the metrics endpoint; 0 turns it off.")
	flag.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address of the health probes; 0 turns them off.")
	flag.StringVar(&o.Identity, "identity", "", "This replica's name in the heartbeat Lease (default: the host name).")
	flag.BoolFunc("builtin-interpreters", "Interpret the third-party kinds Flotilla ships customizations for, as the manager does (see docs/builtin-interpreters.md). "+
		"On by default; =false turns them off (give the manager the same setting).", func(v string) error {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		o.NoBuiltinInterpreters = !on
		return nil
	})
	flag.IntVar(&o.IdleGCPercent, "idle-gc-percent", memlimit.DefaultIdlePercent, "GOGC while the agent is idle (it allocated at most half its live heap in the last minute), "+
		"so that it gives back the memory a burst grew its heap to; Go's 100 is put back at the first burst. 0 turns it off; so does setting $GOGC.")
	memoryLimit := ""
	flag.StringVar(&memoryLimit, "memory-limit", "", memlimit.FlagUsage("the agent's Deployment from `kubectl flotilla register`"))
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	if o.IdleGCPercent < 0 || o.IdleGCPercent >= 100 {
		log.Error(nil, "--idle-gc-percent must be less than Go's default GOGC, 100, or 0 to turn it off", "value", o.IdleGCPercent)
		os.Exit(2)
	}
	limit, from, err := memlimit.Set(memoryLimit, os.Getenv)
	if err != nil {
		log.Error(err, "Bad memory limit")
		os.Exit(2)
	}
	if limit > 0 {
		log.Info("Go soft memory limit set", "bytes", limit, "from", from)
	}
	ns, name, ok := strings.Cut(secret, "/")
	if !ok || ns == "" || name == "" {
		log.Error(nil, "--host-secret must be NAMESPACE/NAME", "value", secret)
		os.Exit(2)
	}
	o.HostSecret = types.NamespacedName{Namespace: ns, Name: name}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Cannot load a kubeconfig for the member cluster")
		os.Exit(1)
	}
	o.Member = cfg
	ctx := ctrl.LoggerInto(ctrl.SetupSignalHandler(), ctrl.Log)
	if err := agent.Run(ctx, o); err != nil {
		log.Error(err, "Agent exited with an error")
		os.Exit(1)
	}
}
