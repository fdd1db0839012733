package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	// LabelGroup names the group of replicas a shard or presence Lease belongs to.
	LabelGroup = "shards.flotilla.io/group"
	// LabelRole is "shard" on a shard's Lease and "replica" on a replica's presence Lease.
	LabelRole = "shards.flotilla.io/role"
	// AnnotationShards on a presence Lease is the replica's number of shards. Replicas that
	// count differently map keys to shards differently, so while any live replica counts
	// differently from this one, this one holds no shard (a rolling update that changes
	// --shards resumes once the old replicas are gone).
	AnnotationShards = "shards.flotilla.io/shards"

	roleShard   = "shard"
	roleReplica = "replica"

	// staleReplica is how long after its last renewal a dead replica's presence Lease is
	// deleted by the others.
	staleReplica = 5 * time.Minute
)

// ElectorOptions configure an Elector.
type ElectorOptions struct {
	// Namespace holds the Leases.
	Namespace string
	// Group prefixes the Leases' names: <group>-shard-<k> and <group>-replica-<hash>.
	Group string
	// Identity names this replica; unique per process.
	Identity string
	// LeaseDuration is how long a Lease lasts without renewal: a replica that dies hands
	// its shards over after about this long.
	LeaseDuration time.Duration
	// RenewDeadline is how long a replica keeps a shard whose Lease it cannot renew; it must
	// be shorter than LeaseDuration, so that work on the shard stops before anyone else may
	// take it.
	RenewDeadline time.Duration
	// RetryPeriod is how often the Leases are looked at and renewed.
	RetryPeriod time.Duration
	// Clock is the time source; the real clock when nil.
	Clock clock.Clock
}

// Validate says what is wrong with the options.
func (o ElectorOptions) Validate() error {
	switch {
	case o.Namespace == "" || o.Group == "" || o.Identity == "":
		return errors.New("shard elector: namespace, group and identity must be set")
	case o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline:
		return fmt.Errorf("shard elector: need 0 < retry period (%s) < renew deadline (%s) < lease duration (%s)", o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	return nil
}

// Elector holds the Leases of the shards this replica should hold, and a presence Lease
// that tells the other replicas it is alive. Every RetryPeriod it lists the group's Leases
// (one request), renews its own, works out from the live replicas which shards are its own
// (Assignment), takes those that are free or expired, and lets go of those that are no
// longer its own once the work inside them has ended. It is a manager Runnable that runs on
// every replica.
type Elector struct {
	set    *Set
	leases coordinationclient.LeaseInterface
	opts   ElectorOptions
	log    logr.Logger

	// seen is, by Lease name, its resourceVersion and when this replica first saw it: a
	// Lease whose resourceVersion has not changed for its duration has expired. Local time
	// only, as client-go's leader election does, so clocks need not agree.
	seen map[string]observation

	mu sync.Mutex
	// held are the shards whose Lease this replica holds, with their last renewal.
	held map[int]time.Time
	// releasing are the shards being let go of; stopped, those of them whose work has ended
	// (their Lease is no longer renewed).
	releasing, stopped map[int]bool
	// mismatched is whether a live replica counts its shards differently (tick only).
	mismatched bool
}

type observation struct {
	resourceVersion string
	at              time.Time
}

var (
	shardsHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "flotilla_shards_held", Help: "Shards whose Lease this replica holds.",
	})
	shardTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_shard_transitions_total", Help: "Shards this replica acquired, released (handed over) or lost (could not renew).",
	}, []string{"transition"})
)

func init() { metrics.Registry.MustRegister(shardsHeld, shardTransitions) }

// NewElector returns an Elector of set's shards.
func NewElector(set *Set, leases coordinationclient.LeasesGetter, opts ElectorOptions) (*Elector, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Elector{
		set: set, leases: leases.Leases(opts.Namespace), opts: opts,
		log:  ctrl.Log.WithName("shards").WithValues("identity", opts.Identity),
		seen: map[string]observation{}, held: map[int]time.Time{}, releasing: map[int]bool{}, stopped: map[int]bool{},
	}, nil
}

// NeedLeaderElection is false: every replica holds shards.
func (e *Elector) NeedLeaderElection() bool { return false }

// ShardLease names shard k's Lease.
func ShardLease(group string, k int) string { return group + "-shard-" + strconv.Itoa(k) }

// ReplicaLease names a replica's presence Lease: identities need not be valid names.
func ReplicaLease(group, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return group + "-replica-" + hex.EncodeToString(sum[:6])
}

// Start keeps the Leases until ctx ends, then lets go of every shard (after the work inside
// ended) and deletes the presence Lease, so that the others take over at once.
func (e *Elector) Start(ctx context.Context) error {
	e.log.Info("Starting shard elector", "shards", e.set.Shards())
	wait.JitterUntilWithContext(ctx, e.tick, e.opts.RetryPeriod, 0.2, true)
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.RenewDeadline)
	defer cancel()
	var wg sync.WaitGroup
	e.mu.Lock()
	for k := range e.held {
		if !e.releasing[k] {
			e.releasing[k] = true
			wg.Go(func() { e.release(stop, k) })
		}
	}
	e.mu.Unlock()
	wg.Wait()
	if err := e.leases.Delete(stop, ReplicaLease(e.opts.Group, e.opts.Identity), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.log.Error(err, "Cannot delete the presence Lease; the others take over the shards when it expires")
	}
	return nil
}

// tick is one round: list, renew, take, let go.
func (e *Elector) tick(ctx context.Context) {
	list, err := e.leases.List(ctx, metav1.ListOptions{LabelSelector: LabelGroup + "=" + e.opts.Group})
	now := e.opts.Clock.Now()
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error(err, "Cannot list the shard Leases")
			e.loseOverdue(now)
		}
		return
	}
	byName := make(map[string]*coordinationv1.Lease, len(list.Items))
	for i := range list.Items {
		l := &list.Items[i]
		byName[l.Name] = l
		if o, ok := e.seen[l.Name]; !ok || o.resourceVersion != l.ResourceVersion {
			at := now
			if !ok && l.Labels[LabelRole] == roleReplica && l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Before(now) {
				// A presence Lease seen for the first time counts from its renewal, so a
				// replica that starts does not wait a lease duration to learn that a dead
				// one is dead. It only decides who tries for a shard; the shard's own Lease
				// is always timed locally.
				at = l.Spec.RenewTime.Time
			}
			e.seen[l.Name] = observation{resourceVersion: l.ResourceVersion, at: at}
		}
	}
	for name := range e.seen {
		if byName[name] == nil {
			delete(e.seen, name)
		}
	}
	e.present(ctx, byName[ReplicaLease(e.opts.Group, e.opts.Identity)], now)
	live, others := e.live(list.Items, now)
	owners := Assignment(e.set.Shards(), live)
	if mismatched := len(others) > 0; mismatched != e.mismatched {
		e.mismatched = mismatched
		if mismatched {
			e.log.Error(nil, "Replicas with a different number of shards are alive: working on no shard until they are gone (change --shards on every replica at once)",
				"shards", e.set.Shards(), "others", others)
		} else {
			e.log.Info("Every live replica has the same number of shards again", "shards", e.set.Shards())
		}
	}
	if e.mismatched {
		for k := range owners {
			owners[k] = "" // nobody: hand over what is held, take nothing
		}
	}
	for k, owner := range owners {
		e.mu.Lock()
		_, held := e.held[k]
		releasing := e.releasing[k]
		e.mu.Unlock()
		if ctx.Err() != nil {
			continue
		}
		if releasing {
			// Being handed over: until the work inside has ended (release then clears the
			// holder), the Lease is still renewed, or it would expire under work that lasts
			// longer than it and another replica would take the shard with the work inside.
			e.mu.Lock()
			working := held && !e.stopped[k]
			e.mu.Unlock()
			if working {
				e.renew(ctx, k, byName[ShardLease(e.opts.Group, k)], now)
			}
			continue
		}
		l := byName[ShardLease(e.opts.Group, k)]
		switch {
		case owner == e.opts.Identity && held:
			e.renew(ctx, k, l, now)
		case owner == e.opts.Identity:
			e.acquire(ctx, k, l, now)
		case held:
			e.mu.Lock()
			e.releasing[k] = true
			e.mu.Unlock()
			e.log.Info("Handing over shard", "shard", k, "to", owner)
			go e.release(context.WithoutCancel(ctx), k)
		}
	}
	e.sweep(ctx, list.Items, now)
}

// live returns the identities of the replicas whose presence Lease is current, this one's
// always included, and apart those of them that count their shards differently.
func (e *Elector) live(leases []coordinationv1.Lease, now time.Time) (same, other []string) {
	same = []string{e.opts.Identity}
	mine := strconv.Itoa(e.set.Shards())
	for i := range leases {
		l := &leases[i]
		if l.Labels[LabelRole] != roleReplica || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == e.opts.Identity || e.expired(l, now) {
			continue
		}
		if n := l.Annotations[AnnotationShards]; n != mine {
			other = append(other, *l.Spec.HolderIdentity+" ("+n+" shards)")
			continue
		}
		same = append(same, *l.Spec.HolderIdentity)
	}
	return same, other
}

// expired reports whether l has not changed for its duration, by this replica's clock.
func (e *Elector) expired(l *coordinationv1.Lease, now time.Time) bool {
	d := e.opts.LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return !now.Before(e.seen[l.Name].at.Add(d))
}

// present creates or renews this replica's presence Lease.
func (e *Elector) present(ctx context.Context, l *coordinationv1.Lease, now time.Time) {
	var err error
	if l == nil {
		_, err = e.leases.Create(ctx, e.lease(ReplicaLease(e.opts.Group, e.opts.Identity), roleReplica, now), metav1.CreateOptions{})
	} else {
		l = l.DeepCopy()
		l.Spec.HolderIdentity = ptr.To(e.opts.Identity)
		l.Spec.RenewTime = &metav1.MicroTime{Time: now}
		metav1.SetMetaDataAnnotation(&l.ObjectMeta, AnnotationShards, strconv.Itoa(e.set.Shards()))
		_, err = e.leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil && ctx.Err() == nil {
		e.log.Error(err, "Cannot renew the presence Lease")
	}
}

func (e *Elector) lease(name, role string, now time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.opts.Namespace, Labels: map[string]string{LabelGroup: e.opts.Group, LabelRole: role},
			Annotations: map[string]string{AnnotationShards: strconv.Itoa(e.set.Shards())}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(e.opts.Identity),
			LeaseDurationSeconds: ptr.To(int32(e.opts.LeaseDuration / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: now},
			RenewTime:            &metav1.MicroTime{Time: now},
		},
	}
}

// acquire takes shard k's Lease when nobody holds it or its holder let it expire. The write
// carries the resourceVersion read, so of two replicas that both think the shard theirs
// (their views of who is alive differ for a moment) only one gets it.
func (e *Elector) acquire(ctx context.Context, k int, l *coordinationv1.Lease, now time.Time) {
	name := ShardLease(e.opts.Group, k)
	var err error
	switch {
	case l == nil:
		_, err = e.leases.Create(ctx, e.lease(name, roleShard, now), metav1.CreateOptions{})
	case l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && *l.Spec.HolderIdentity != e.opts.Identity && !e.expired(l, now):
		return // held; its holder lets go of it when it sees this replica alive
	default:
		l = l.DeepCopy()
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != e.opts.Identity {
			l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		}
		l.Spec.HolderIdentity = ptr.To(e.opts.Identity)
		l.Spec.LeaseDurationSeconds = ptr.To(int32(e.opts.LeaseDuration / time.Second))
		l.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		l.Spec.RenewTime = &metav1.MicroTime{Time: now}
		_, err = e.leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			e.log.Error(err, "Cannot acquire shard", "shard", k)
		}
		return
	}
	e.mu.Lock()
	e.held[k] = now
	shardsHeld.Set(float64(len(e.held)))
	e.mu.Unlock()
	shardTransitions.WithLabelValues("acquired").Inc()
	e.log.Info("Acquired shard", "shard", k)
	e.set.open(k)
}

// renew renews shard k's Lease. A Lease that is gone or held by someone else is lost at
// once; one that cannot be written is lost once RenewDeadline passed since the last renewal.
func (e *Elector) renew(ctx context.Context, k int, l *coordinationv1.Lease, now time.Time) {
	if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != e.opts.Identity {
		e.lose(k, "the Lease is gone or held by another replica")
		return
	}
	l = l.DeepCopy()
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if _, err := e.leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		if ctx.Err() == nil {
			e.log.Error(err, "Cannot renew shard", "shard", k)
		}
		e.loseOverdue(now)
		return
	}
	e.mu.Lock()
	e.held[k] = now
	e.mu.Unlock()
}

// loseOverdue stops work on every held shard not renewed within RenewDeadline.
func (e *Elector) loseOverdue(now time.Time) {
	e.mu.Lock()
	var overdue []int
	for k, at := range e.held {
		if !e.releasing[k] && now.Sub(at) >= e.opts.RenewDeadline {
			overdue = append(overdue, k)
		}
	}
	e.mu.Unlock()
	for _, k := range overdue {
		e.lose(k, "not renewed within the renew deadline")
	}
}

// lose stops work on shard k without writing its Lease.
func (e *Elector) lose(k int, why string) {
	e.set.close(k)
	e.mu.Lock()
	delete(e.held, k)
	shardsHeld.Set(float64(len(e.held)))
	e.mu.Unlock()
	shardTransitions.WithLabelValues("lost").Inc()
	e.log.Info("Lost shard", "shard", k, "reason", why)
}

// release stops work on shard k, waits for the work inside to end, then clears the Lease's
// holder so the replica it now belongs to takes it at its next round.
func (e *Elector) release(ctx context.Context, k int) {
	e.set.close(k)
	e.mu.Lock()
	e.stopped[k] = true
	e.mu.Unlock()
	e.log.Info("Stopped work on shard", "shard", k)
	name := ShardLease(e.opts.Group, k)
	err := wait.PollUntilContextTimeout(ctx, e.opts.RetryPeriod/4, e.opts.RenewDeadline, true, func(ctx context.Context) (bool, error) {
		l, err := e.leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, nil
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != e.opts.Identity {
			return true, nil
		}
		l.Spec.HolderIdentity = ptr.To("")
		l.Spec.LeaseDurationSeconds = ptr.To(int32(1))
		l.Spec.RenewTime = &metav1.MicroTime{Time: e.opts.Clock.Now()}
		_, err = e.leases.Update(ctx, l, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		e.log.Error(err, "Cannot release shard; it is taken over when its Lease expires", "shard", k)
	}
	e.mu.Lock()
	delete(e.held, k)
	delete(e.releasing, k)
	delete(e.stopped, k)
	shardsHeld.Set(float64(len(e.held)))
	e.mu.Unlock()
	shardTransitions.WithLabelValues("released").Inc()
	e.log.Info("Released shard", "shard", k)
}

// sweep deletes the presence Leases of replicas gone for staleReplica.
func (e *Elector) sweep(ctx context.Context, leases []coordinationv1.Lease, now time.Time) {
	for i := range leases {
		l := &leases[i]
		if l.Labels[LabelRole] != roleReplica || l.Spec.RenewTime == nil || now.Sub(e.seen[l.Name].at) < staleReplica {
			continue
		}
		err := e.leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
		if err == nil {
			e.log.Info("Deleted the presence Lease of a replica gone for good", "lease", l.Name, "holder", ptr.Deref(l.Spec.HolderIdentity, ""))
		}
	}
}
