// Package memberqueue runs work that talks to member clusters on workers of their own: one
// rate-limited queue and a few goroutines per member. A member that is down, slow or
// rate-limited then holds only its own workers, never the shared workers of a controller,
// so the other members' work goes on at full speed.
//
// A controller's Reconcile reads the host, decides that a member must be written to, and
// hands the key to Queues.Add; the member's workers call Process with it. Process's result is
// handled as controller-runtime handles a Reconcile's: RequeueAfter requeues after that
// delay, an error requeues with the queue's exponential backoff, success forgets the key's
// failures.
package memberqueue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-io/flotilla/internal/hostmetrics"
)

// DefaultWorkers is how many keys of one member are processed at once.
const DefaultWorkers = 4

// DefaultTimeout bounds the processing of one key when Queues.Timeout is zero. One member
// request times out after 30 s, so a key's usual read and write fit with room to spare.
const DefaultTimeout = time.Minute

// ProcessFunc does the member work for one key of one member.
type ProcessFunc[K comparable] func(ctx context.Context, cluster string, key K) (ctrl.Result, error)

// Queues holds one queue per member. It is a manager Runnable: add it with mgr.Add; Add may
// be called before it starts (keys wait until it does).
type Queues[K comparable] struct {
	// Name prefixes the queues' names in metrics and logs ("<name>/<cluster>").
	Name string
	// Workers per member; DefaultWorkers when zero.
	Workers int
	// Process does the work.
	Process ProcessFunc[K]
	// EveryReplica runs the workers on every replica, not on the leader alone: a sharded
	// manager's, where each replica processes the keys of its own shards.
	EveryReplica bool
	// Timeout bounds one call of Process (DefaultTimeout when zero): its context ends then,
	// and the key is retried with backoff. A wait that nothing else bounds (a member cache
	// that never syncs, a connection that hangs) then holds a worker for this long at most,
	// not until the process exits.
	Timeout time.Duration

	mu      sync.Mutex
	ctx     context.Context // set by Start
	queues  map[string]priorityqueue.PriorityQueue[K]
	started map[string]bool
}

// New returns Queues that call process.
func New[K comparable](name string, workers int, process ProcessFunc[K]) *Queues[K] {
	return &Queues[K]{Name: name, Workers: workers, Process: process}
}

// NeedLeaderElection: member work is done where the controllers that feed the queues run:
// by the leader only, unless EveryReplica.
func (q *Queues[K]) NeedLeaderElection() bool { return !q.EveryReplica }

// Start runs the workers of every queue until ctx ends, then shuts the queues down.
func (q *Queues[K]) Start(ctx context.Context) error {
	q.mu.Lock()
	q.ctx = ctx
	for cluster := range q.queues {
		q.startLocked(cluster)
	}
	q.mu.Unlock()
	<-ctx.Done()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, wq := range q.queues {
		wq.ShutDown()
	}
	return nil
}

// Add queues key for cluster's workers.
func (q *Queues[K]) Add(cluster string, key K) {
	q.queue(cluster).Add(key)
}

// AddLow queues key for cluster's workers behind every key added with Add: for work that
// only checks that nothing changed (a manager that starts looks at everything again), so that
// what did change goes first. A key already queued keeps the higher of its priorities.
func (q *Queues[K]) AddLow(cluster string, key K) {
	q.queue(cluster).AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, key)
}

// Remove shuts cluster's queue down, for a member whose Cluster is gone: its workers finish
// the keys they hold and the keys ready in the queue, then exit; keys waiting for a retry are
// dropped. A later Add for cluster starts a new queue.
func (q *Queues[K]) Remove(cluster string) {
	q.mu.Lock()
	wq := q.queues[cluster]
	delete(q.queues, cluster)
	delete(q.started, cluster)
	q.mu.Unlock()
	if wq != nil {
		wq.ShutDown()
	}
}

// Clusters returns the members that have a queue, in no order.
func (q *Queues[K]) Clusters() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Collect(maps.Keys(q.queues))
}

// Len reports how many keys wait in cluster's queue.
func (q *Queues[K]) Len(cluster string) int {
	return q.queue(cluster).Len()
}

func (q *Queues[K]) queue(cluster string) priorityqueue.PriorityQueue[K] {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queues == nil {
		q.queues = map[string]priorityqueue.PriorityQueue[K]{}
		q.started = map[string]bool{}
	}
	wq, ok := q.queues[cluster]
	if !ok {
		// controller-runtime's priority queue (AddLow), with the backoff its controllers
		// use.
		wq = priorityqueue.New(fmt.Sprintf("%s/%s", q.Name, cluster), func(o *priorityqueue.Opts[K]) {
			o.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[K]()
		})
		q.queues[cluster] = wq
		if q.ctx != nil {
			q.startLocked(cluster)
		}
	}
	return wq
}

// startLocked starts cluster's workers; q.mu is held and q.ctx set.
func (q *Queues[K]) startLocked(cluster string) {
	if q.started[cluster] {
		return
	}
	q.started[cluster] = true
	workers := q.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	wq := q.queues[cluster]
	log := ctrl.LoggerFrom(q.ctx).WithName(q.Name).WithValues("Cluster", cluster)
	ctx := hostmetrics.WithController(ctrl.LoggerInto(q.ctx, log), q.Name+"/member")
	for range workers {
		go func() {
			for q.next(ctx, cluster, wq) {
			}
		}()
	}
}

// next processes one key; it returns false once the queue is shut down. A key retried (an
// error, RequeueAfter) keeps the priority it was taken with, as controller-runtime's
// controllers do: a check that nothing changed, which failed once, does not jump ahead of
// the new work it was queued behind.
func (q *Queues[K]) next(ctx context.Context, cluster string, wq priorityqueue.PriorityQueue[K]) bool {
	key, priority, shutdown := wq.GetWithPriority()
	if shutdown {
		return false
	}
	defer wq.Done(key)
	res, err := q.safeProcess(ctx, cluster, key)
	switch {
	case err != nil && errors.Is(err, reconcile.TerminalError(nil)):
		ctrl.LoggerFrom(ctx).Error(err, "Member work failed and will not be retried", "key", key)
		wq.Forget(key)
	case err != nil:
		ctrl.LoggerFrom(ctx).Error(err, "Member work failed; retrying with backoff", "key", key)
		wq.AddWithOpts(priorityqueue.AddOpts{RateLimited: true, Priority: &priority}, key)
	case res.RequeueAfter > 0:
		wq.Forget(key)
		wq.AddWithOpts(priorityqueue.AddOpts{After: res.RequeueAfter, Priority: &priority}, key)
	default:
		wq.Forget(key)
	}
	return true
}

// safeProcess turns a panic in Process into an error, as controller-runtime does for
// Reconcile, so that one bad object does not take the manager down.
func (q *Queues[K]) safeProcess(ctx context.Context, cluster string, key K) (res ctrl.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic processing %v for cluster %s: %v", key, cluster, r)
		}
	}()
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err = q.Process(pctx, cluster, key)
	timedOut := errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if timedOut {
		// Whatever Process returned, the work it was doing was cut short: retry it (an
		// error it returned is kept as text, so that a terminal one does not stop the retry).
		msg := fmt.Sprintf("processing %v for cluster %s took longer than %s", key, cluster, timeout)
		if err != nil {
			msg += fmt.Sprintf(" (%v)", err)
		}
		err = fmt.Errorf("%s: %w", msg, pctx.Err())
		res = ctrl.Result{}
	}
	observe(q.Name, time.Since(start), err, timedOut)
	return res, err
}
