// Package hostclient sets the manager's client-side limit towards the host apiserver.
//
// controller-runtime gives every kind its own REST client, and client-go gives every REST
// client its own token bucket: a limit of 100 QPS "per client" is 100 per kind, and the
// manager's real rate is that times the kinds it writes, a number nobody chose. The busiest
// kind (Works: a create and a status write per member) is held back while the others idle.
// Configure instead makes one budget for every request to the host, whatever the kind,
// which is both the bound the host's operators can reason about and the rate the chain can
// spend where the work is. The host's API Priority and Fairness still queues the manager's
// flow behind more important ones.
//
// The leader election Lease gets a client of its own, outside that budget: renewing
// leadership never waits behind a bulk of Work writes.
//
// Configure also names the manager to the host: its user agent, from which the apiserver
// takes the field manager of every write that does not name one (creates, patches, deletes
// that set a deletion timestamp). Without it client-go's default names the binary, and every
// kubebuilder operator's binary is called "manager": their writes would share one field
// manager in the host's managedFields, and audit logs could not tell them apart.
package hostclient

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the field manager of the manager's writes to the host that do not name
// one: the part of its user agent before the first slash.
const FieldManager = "flotilla-manager"

// UserAgent is the manager's user agent towards the host: FieldManager, the module version
// the binary was built from ("devel" for a build from a work tree), and the platform.
func UserAgent() string {
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	return fmt.Sprintf("%s/%s (%s/%s)", FieldManager, version, runtime.GOOS, runtime.GOARCH)
}

const (
	// DefaultQPS and DefaultBurst are the manager's budget towards the host, all kinds
	// together.
	DefaultQPS   = 500
	DefaultBurst = 1000

	// leaderElectionQPS and leaderElectionBurst are the leader election client's own limit:
	// one renewal every retry period needs little.
	leaderElectionQPS   = 5
	leaderElectionBurst = 10
)

// Configure sets cfg's client-side limit to one token bucket of qps and burst shared by
// every client made from cfg (or a copy of it). A qps of zero or less disables the limit:
// the host's API Priority and Fairness alone paces the manager. It returns the config of the
// leader election client, which has a limit of its own. A cfg without a user agent gets
// UserAgent(), and the leader election client with it.
func Configure(cfg *rest.Config, qps float64, burst int) (leaderElection *rest.Config) {
	if cfg.UserAgent == "" {
		cfg.UserAgent = UserAgent()
	}
	leaderElection = rest.CopyConfig(cfg)
	leaderElection.RateLimiter = nil
	leaderElection.QPS, leaderElection.Burst = leaderElectionQPS, leaderElectionBurst

	if qps <= 0 {
		cfg.RateLimiter = nil
		cfg.QPS, cfg.Burst = -1, 0
		return leaderElection
	}
	if burst < 1 {
		burst = 1
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)
	return leaderElection
}

// HostID reads the host's id: the UID of its kube-system namespace, which stays the same for
// the cluster's life and differs between clusters. Member objects name it in
// flotilla.io/host-id so a member shared by two control planes knows whose each object is.
func HostID(ctx context.Context, r client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("read the host's id (the UID of namespace %s): %w", metav1.NamespaceSystem, err)
	}
	return string(ns.UID), nil
}
