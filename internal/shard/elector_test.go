package shard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

const (
	shards        = 6
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 250 * time.Millisecond
)

var (
	host *localcluster.Cluster
	cs   *kubernetes.Clientset
)

func TestElector(t *testing.T) {
	SetDefaultEventuallyTimeout(30 * time.Second)
	fleettest.RunSuite(t, "Shard elector suite", "a kube-apiserver")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	host, err = localcluster.Start(ctx, localcluster.Options{Name: "shard-host"})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(host.Stop)
	cs, err = kubernetes.NewForConfig(host.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(2*time.Minute))

// replica is one Elector with its Set, and a worker that keeps entering every shard.
type replica struct {
	id     string
	set    *shard.Set
	leases *partitionable
	cancel context.CancelFunc
	done   chan struct{}
}

// partitionable is a Lease client that can be cut off from the apiserver, as a replica on
// the wrong side of a network partition is.
type partitionable struct {
	coordinationclient.LeaseInterface
	cut atomic.Bool
}

var errCut = errors.New("partitioned")

func (p *partitionable) Leases(string) coordinationclient.LeaseInterface { return p }
func (p *partitionable) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if p.cut.Load() {
		return nil, errCut
	}
	return p.LeaseInterface.List(ctx, o)
}
func (p *partitionable) Get(ctx context.Context, n string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errCut
	}
	return p.LeaseInterface.Get(ctx, n, o)
}
func (p *partitionable) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errCut
	}
	return p.LeaseInterface.Create(ctx, l, o)
}
func (p *partitionable) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, errCut
	}
	return p.LeaseInterface.Update(ctx, l, o)
}
func (p *partitionable) Delete(ctx context.Context, n string, o metav1.DeleteOptions) error {
	if p.cut.Load() {
		return errCut
	}
	return p.LeaseInterface.Delete(ctx, n, o)
}
func (p *partitionable) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return nil, errCut
}

// occupancy counts, per shard, the replicas inside it at this moment; more than one is a
// violation of the elector's one promise.
type occupancy struct {
	inside     [shards]atomic.Int32
	violations atomic.Int32
	entries    [shards]atomic.Int64
}

func keysByShard() [shards]string {
	var keys [shards]string
	found := 0
	for i := 0; found < shards; i++ {
		key := fmt.Sprintf("ns/key-%d", i)
		if k := shard.Of(key, shards); keys[k] == "" {
			keys[k] = key
			found++
		}
	}
	return keys
}

func startReplica(ctx context.Context, group, id string, occ *occupancy) *replica {
	GinkgoHelper()
	return startReplicaOf(ctx, shards, group, id, occ)
}

// startReplicaOf starts a replica that counts n shards (the worker enters the first
// min(n, shards) of keysByShard's keys only when n is shards).
func startReplicaOf(ctx context.Context, n int, group, id string, occ *occupancy) *replica {
	GinkgoHelper()
	set := shard.NewSet(n)
	p := &partitionable{LeaseInterface: cs.CoordinationV1().Leases("default")}
	e, err := shard.NewElector(set, p, shard.ElectorOptions{Namespace: "default", Group: group, Identity: id,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctx)
	r := &replica{id: id, set: set, leases: p, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Start(ctx) })
	keys := keysByShard()
	// Work on every shard it holds, a few milliseconds at a time, as reconciles do.
	wg.Go(func() {
		for ctx.Err() == nil {
			for k, key := range keys {
				done, ok := set.Enter(key)
				if !ok {
					continue
				}
				if occ.inside[k].Add(1) > 1 {
					occ.violations.Add(1)
				}
				occ.entries[k].Add(1)
				time.Sleep(2 * time.Millisecond)
				occ.inside[k].Add(-1)
				done()
			}
			time.Sleep(time.Millisecond)
		}
	})
	go func() { wg.Wait(); close(r.done) }()
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

// holders returns, per shard, the replicas that hold it.
func holders(rs ...*replica) [shards][]string {
	var out [shards][]string
	for _, r := range rs {
		for k := range shards {
			if r.set.HoldsShard(k) {
				out[k] = append(out[k], r.id)
			}
		}
	}
	return out
}

// heldAsAssigned reports whether each shard is held by exactly the replica Assignment names.
func heldAsAssigned(rs ...*replica) func(Gomega) {
	return func(g Gomega) {
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.id)
		}
		want := shard.Assignment(shards, ids)
		got := holders(rs...)
		for k := range shards {
			g.Expect(got[k]).To(Equal([]string{want[k]}), "holders of shard %d", k)
		}
	}
}

// timeUntil measures how long until f passes.
func timeUntil(f func(Gomega)) time.Duration {
	GinkgoHelper()
	start := time.Now()
	Eventually(f).WithPolling(50 * time.Millisecond).Should(Succeed())
	return time.Since(start)
}

var _ = Describe("Shard Leases", func() {
	It("split the shards between live replicas, hand them over on shutdown, partition and return, and never let two replicas in one shard", func(ctx SpecContext) {
		occ := &occupancy{}
		a := startReplica(ctx, "split", "replica-a", occ)
		DeferCleanup(a.stop)
		By("one replica holds every shard")
		Eventually(heldAsAssigned(a)).Should(Succeed())

		b := startReplica(ctx, "split", "replica-b", occ)
		DeferCleanup(b.stop)
		c := startReplica(ctx, "split", "replica-c", occ)
		DeferCleanup(c.stop)
		By("two more replicas take the shards rendezvous hashing gives them")
		joined := timeUntil(heldAsAssigned(a, b, c))
		GinkgoWriter.Printf("three replicas hold their shards %s after the last started\n", joined)

		By("a replica that stops hands its shards over at once")
		Expect(holders(a)).To(ContainElement(ConsistOf(a.id)), "each of three replicas holds two of six shards")
		stopAt := time.Now()
		a.stop()
		stopping := time.Since(stopAt)
		handover := timeUntil(heldAsAssigned(b, c)) + stopping
		GinkgoWriter.Printf("graceful handover: %s, of which %s stopping (lease duration %s)\n", handover, stopping, leaseDuration)
		Expect(handover).To(BeNumerically("<", leaseDuration), "a stopping replica releases its Leases; nobody waits for them to expire")

		By("a replica cut off from the apiserver stops work within the renew deadline, and the other takes over once the Leases expire")
		b.leases.cut.Store(true)
		var stopped time.Duration
		var heldBefore int
		for k := range shards {
			if b.set.HoldsShard(k) {
				heldBefore++
			}
		}
		Expect(heldBefore).To(BeNumerically(">", 0), "b held no shard; the rendezvous of this test's names gives it some")
		stopped = timeUntil(func(g Gomega) {
			for k := range shards {
				g.Expect(b.set.HoldsShard(k)).To(BeFalse())
			}
		})
		takeover := timeUntil(heldAsAssigned(c))
		GinkgoWriter.Printf("partitioned replica stopped work after %s; the other held every shard %s later\n", stopped, takeover)
		Expect(stopped).To(BeNumerically("<", leaseDuration))

		By("the partition heals: the replica comes back and gets its shards again")
		b.leases.cut.Store(false)
		Eventually(heldAsAssigned(b, c)).Should(Succeed())

		Consistently(heldAsAssigned(b, c)).WithTimeout(2 * leaseDuration).Should(Succeed())
		Expect(occ.violations.Load()).To(BeZero(), "two replicas were inside one shard at once")
		for k := range shards {
			Expect(occ.entries[k].Load()).To(BeNumerically(">", 0), "shard %d was never worked on", k)
		}
	}, SpecTimeout(3*time.Minute))

	It("hold no shard while a live replica counts its shards differently", func(ctx SpecContext) {
		occ := &occupancy{}
		a := startReplica(ctx, "mixed", "replica-a", occ)
		DeferCleanup(a.stop)
		Eventually(heldAsAssigned(a)).Should(Succeed())
		By("a replica started with another --shards stops every replica's work, its own included")
		odd := startReplicaOf(ctx, 4, "mixed", "replica-odd", &occupancy{})
		DeferCleanup(odd.stop)
		Eventually(func(g Gomega) {
			for k := range shards {
				g.Expect(a.set.HoldsShard(k)).To(BeFalse(), "a holds shard %d", k)
			}
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			for k := range 4 {
				g.Expect(odd.set.HoldsShard(k)).To(BeFalse(), "the odd replica holds shard %d", k)
			}
		}).WithTimeout(time.Second).Should(Succeed())
		By("once it is gone, the others go on")
		odd.stop()
		Eventually(heldAsAssigned(a)).Should(Succeed())
		Expect(occ.violations.Load()).To(BeZero())
	}, SpecTimeout(time.Minute))

	It("keep a shard handed over until the work inside it ends, however long that takes", func(ctx SpecContext) {
		occ := &occupancy{}
		a := startReplica(ctx, "slow", "replica-a", occ)
		DeferCleanup(a.stop)
		Eventually(heldAsAssigned(a)).Should(Succeed())
		want := shard.Assignment(shards, []string{"replica-a", "replica-b"})
		k := -1
		for i, owner := range want {
			if owner == "replica-b" {
				k = i
				break
			}
		}
		Expect(k).NotTo(Equal(-1), "the rendezvous of this test's names gives replica-b a shard")
		By("a reconcile inside the shard that b is to take lasts longer than a lease")
		enterDone, ok := a.set.Enter(keysByShard()[k])
		Expect(ok).To(BeTrue())
		var once sync.Once
		done := func() { once.Do(enterDone) }
		DeferCleanup(done) // before a stops, even when the spec fails
		b := startReplica(ctx, "slow", "replica-b", occ)
		DeferCleanup(b.stop)
		// Before, a stopped renewing the Lease when it began to hand the shard over, so b
		// took it a lease duration later, with a's work still inside.
		Consistently(func() bool { return b.set.HoldsShard(k) }).WithTimeout(3*leaseDuration).
			Should(BeFalse(), "b took shard %d while a's work was still inside it", k)
		done()
		By("once the work ends, b takes the shard")
		Eventually(heldAsAssigned(a, b)).Should(Succeed())
		Expect(occ.violations.Load()).To(BeZero())
	}, SpecTimeout(time.Minute))

	It("rejects timings where work could go on after another replica may take the shard", func() {
		_, err := shard.NewElector(shard.NewSet(2), cs.CoordinationV1(), shard.ElectorOptions{Namespace: "default", Group: "g", Identity: "x",
			LeaseDuration: time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond})
		Expect(err).To(MatchError(ContainSubstring("renew deadline")))
	})
})
