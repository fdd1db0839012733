package shard

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Set is the shards this replica holds, and the gate every sharded reconcile passes. The
// Elector opens a shard's gate once its Lease is held and closes it before the Lease is let
// go of: closing waits for the reconciles inside the gate to end, so no key is ever worked
// on by two replicas at once.
//
// A nil *Set is the unsharded manager: it holds every key, and its Gate and Source change
// nothing.
type Set struct {
	n      int
	shards []*gate

	mu       sync.Mutex
	acquired []func(shard int)
	lost     []func(shard int)
}

// gate is one shard's: open while the shard is held. Reconciles hold mu for reading while
// they run; closing takes it for writing, which waits for them.
type gate struct {
	mu   sync.RWMutex
	open atomic.Bool
}

// NewSet returns a Set of n shards, none held. n below 1 counts as 1.
func NewSet(n int) *Set {
	n = max(n, 1)
	s := &Set{n: n, shards: make([]*gate, n)}
	for k := range s.shards {
		s.shards[k] = &gate{}
	}
	return s
}

// Shards returns the number of shards; 1 for a nil Set.
func (s *Set) Shards() int {
	if s == nil {
		return 1
	}
	return s.n
}

// Key is the key of a request in a Set: its namespace/name.
func Key(req reconcile.Request) string { return req.NamespacedName.String() }

// Holds reports whether this replica holds the shard of key now.
func (s *Set) Holds(key string) bool {
	if s == nil {
		return true
	}
	return s.shards[Of(key, s.n)].open.Load()
}

// HoldsShard reports whether this replica holds shard k now.
func (s *Set) HoldsShard(k int) bool {
	if s == nil {
		return true
	}
	return k >= 0 && k < s.n && s.shards[k].open.Load()
}

// Enter starts work on key: ok is false when this replica does not hold key's shard, and
// the work must then not be done. When ok, call done when the work ends; the shard is not
// let go of before. Work must not Enter again while inside: closing the gate waits for it.
func (s *Set) Enter(key string) (done func(), ok bool) {
	if s == nil {
		return func() {}, true
	}
	g := s.shards[Of(key, s.n)]
	g.mu.RLock()
	if !g.open.Load() {
		g.mu.RUnlock()
		return nil, false
	}
	return g.mu.RUnlock, true
}

// open lets work on shard k in and tells the listeners.
func (s *Set) open(k int) {
	s.shards[k].open.Store(true)
	s.mu.Lock()
	fns := append([]func(int){}, s.acquired...)
	s.mu.Unlock()
	for _, fn := range fns {
		fn(k)
	}
}

// close keeps new work on shard k out, waits for the work inside to end, and tells the
// listeners.
func (s *Set) close(k int) {
	g := s.shards[k]
	g.open.Store(false)
	g.mu.Lock()
	//nolint:staticcheck // an empty critical section: taking the lock waits for the readers.
	g.mu.Unlock()
	s.mu.Lock()
	fns := append([]func(int){}, s.lost...)
	s.mu.Unlock()
	for _, fn := range fns {
		fn(k)
	}
}

// OnLost calls fn with every shard this replica stops holding, after the work inside it
// ended. Controllers forget there what they remember of the shard's keys: another replica
// may change them before the shard comes back. Nothing is called on a nil Set.
func (s *Set) OnLost(fn func(shard int)) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost = append(s.lost, fn)
}

// Gate wraps r so that it reconciles only the requests of shards this replica holds; the
// others are dropped (their holder reconciles them). On a nil Set it returns r.
func (s *Set) Gate(r reconcile.Reconciler) reconcile.Reconciler {
	if s == nil {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		done, ok := s.Enter(Key(req))
		if !ok {
			return reconcile.Result{}, nil
		}
		defer done()
		return r.Reconcile(ctx, req)
	})
}

// Lister lists the requests a controller reconciles.
type Lister func(ctx context.Context) ([]reconcile.Request, error)

// Source is a controller source that queues, whenever this replica comes to hold a shard,
// every request list returns that falls in it: events on those keys were dropped while
// another replica held them. On a nil Set it is nil (add it with Watches only when not nil).
func (s *Set) Source(list Lister) source.Source {
	if s == nil {
		return nil
	}
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		resync := func(k int) {
			reqs, err := list(ctx)
			if err != nil {
				// The cache lists; it fails only when the controller stops.
				ctrl.LoggerFrom(ctx).Error(err, "Cannot list the keys of an acquired shard", "shard", k)
				return
			}
			for _, req := range reqs {
				if Of(Key(req), s.n) == k {
					q.Add(req)
				}
			}
		}
		s.mu.Lock()
		s.acquired = append(s.acquired, func(k int) { go resync(k) })
		s.mu.Unlock()
		// Shards held before the controller started.
		for k := range s.n {
			if s.HoldsShard(k) {
				go resync(k)
			}
		}
		return nil
	})
}

// ListFrom returns a Lister of the objects of list's kind in c (the manager's cache), as
// requests for their own keys.
func ListFrom(c client.Reader, newList func() client.ObjectList) Lister {
	return func(ctx context.Context) ([]reconcile.Request, error) {
		list := newList()
		if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		var reqs []reconcile.Request
		err := meta.EachListItem(list, func(o runtime.Object) error {
			m, err := meta.Accessor(o)
			if err != nil {
				return err
			}
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: m.GetNamespace(), Name: m.GetName()}})
			return nil
		})
		return reqs, err
	}
}

// Options returns o for a controller sharded by s: one that runs on every replica, not on
// the leader alone. On a nil Set it returns o.
func (s *Set) Options(o controller.Options) controller.Options {
	if s != nil {
		o.NeedLeaderElection = ptr.To(false)
	}
	return o
}

// Complete completes b with r gated by s (Gate) and, when s is not nil, a Source of the keys
// list returns, so that the keys of every shard acquired are reconciled.
func (s *Set) Complete(b *builder.Builder, list Lister, r reconcile.Reconciler) error {
	if s != nil {
		b = b.WatchesRawSource(s.Source(list))
	}
	return b.Complete(s.Gate(r))
}
