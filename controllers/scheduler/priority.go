package scheduler

import (
	"cmp"
	"context"
	"slices"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-io/flotilla/internal/bindings"
)

// QueuePriority is where a binding waits in the scheduler's queue: its
// spec.schedulePriority.priority (the PropagationPolicy's schedulePriority, resolved by the
// detector from its PriorityClass), 0 without one. Higher goes first. Priorities below
// handler.LowPriority are raised to just above it, so that a binding is never put behind the
// resyncs and unchanged updates controller-runtime queues at LowPriority.
func QueuePriority(o client.Object) int {
	sp := bindings.Spec(o).SchedulePriority
	if sp == nil {
		return 0
	}
	return max(int(sp.Priority), handler.LowPriority+1)
}

// enqueue adds the bindings' keys at their QueuePriority; low puts them at LowPriority (an
// update that changed nothing, such as a resync).
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], low bool, objs ...client.Object) {
	enqueueAt(q, func(o client.Object) int {
		if low {
			return handler.LowPriority
		}
		return QueuePriority(o)
	}, objs...)
}

// initialPriority is the priority of a binding the cache's initial list holds (at start,
// every binding, which is checked again and is usually placed already): one below its
// QueuePriority when that is the default or lower, so that a binding of the default priority
// created or changed meanwhile goes first; a schedulePriority above the default keeps its
// place. The order among the bindings of the initial list is kept ("highest first" holds at
// start too), down to LowPriority.
func initialPriority(o client.Object) int {
	p := QueuePriority(o)
	if p > 0 {
		return p
	}
	return max(p-1, handler.LowPriority)
}

// enqueueAt adds the bindings' keys at the priority priority gives each, highest first: an
// idle worker takes the first key added at once, before the rest are in the queue, so the
// order of the adds decides which binding goes first when many come back together (a
// Cluster Ready again, capacity freed), not only the queue's order.
func enqueueAt(q workqueue.TypedRateLimitingInterface[reconcile.Request], priority func(client.Object) int, objs ...client.Object) {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		for _, o := range objs {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		}
		return
	}
	type keyed struct {
		req      reconcile.Request
		priority int
	}
	adds := make([]keyed, len(objs))
	for i, o := range objs {
		adds[i] = keyed{reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}, priority(o)}
	}
	slices.SortStableFunc(adds, func(a, b keyed) int { return cmp.Compare(b.priority, a.priority) })
	for _, a := range adds {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &a.priority}, a.req)
	}
}

// byPriority queues a binding's own events at its QueuePriority.
func byPriority() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.IsInInitialList {
				enqueueAt(q, initialPriority, e.Object)
				return
			}
			enqueue(q, false, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion(), e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, false, e.Object)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, false, e.Object)
		},
	}
}

// clusterHandler queues, for a Cluster's event, the bindings bindingsFor returns, each at its
// QueuePriority: after a cluster fails or gains capacity, the bindings of higher priority are
// placed first.
func clusterHandler(bindingsFor func(ctx context.Context, cluster client.Object) []client.Object) handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.IsInInitialList {
				// At start: the bindings come in their own initial list too.
				enqueueAt(q, initialPriority, bindingsFor(ctx, e.Object)...)
				return
			}
			enqueue(q, false, bindingsFor(ctx, e.Object)...)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, false, bindingsFor(ctx, e.ObjectNew)...)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, false, bindingsFor(ctx, e.Object)...)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, false, bindingsFor(ctx, e.Object)...)
		},
	}
}
