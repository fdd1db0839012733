package member

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Member events reach the controllers through sources (Source, HealthSource), one
// subscriber per controller. A subscriber exists only while its controller runs: the source
// subscribes in Start, which controller-runtime calls when the controller starts (on the
// leader alone for a controller that needs leader election), and unsubscribes when the
// controller stops. A standby therefore queues nothing for the leader-only controllers.
//
// Delivering never waits on a subscriber. The producers are the member informers' event
// handlers and the probe goroutines: one blocked send would stop a member's informers (no
// drift repair, no status reflection) and its probes. Each subscriber has a queue of its own
// (a client-go workqueue, which never blocks Add and holds a key once however often it is
// added) and a goroutine that hands the queued events to the controller's handler, at the
// controller's pace.
//
// Coalescing loses nothing a controller acts on. An event is keyed by its member, kind,
// namespace and name; events of one key pending together are merged into the latest, except
// those whose labels or annotations differ, which are kept side by side. The handlers map an
// event to reconcile requests from exactly those fields (the object's kind, namespace, name,
// labels and annotations: the Work named in its annotations, the service named in its
// labels, the Cluster's name), and the reconcilers read the member's state when they run, not
// the event's object; so a merged event maps to the requests its parts mapped to, and every
// reconcile the events called for still happens, after the last of them. An event that
// arrives while its key's earlier one is being handled is queued again (the workqueue's
// dirty/processing sets), never folded into the one already taken. Distinct keys are never
// dropped: the queue grows with them instead, and is bounded by the member objects (and
// members) that changed since the subscriber last caught up.
//
// A handler of these sources must not map an event from other fields than those.

// eventKey identifies the member object (or the member itself, for connection events) an
// event is about.
type eventKey struct {
	cluster         string
	gvk             schema.GroupVersionKind
	namespace, name string
}

// clusterKey is the key of a member's connection and health events.
func clusterKey(name string) eventKey {
	return eventKey{cluster: name, gvk: clusterv1alpha1.GroupVersion.WithKind("Cluster")}
}

// clusterEvent is the object sent to subscribers when a member connects or disconnects: a
// Cluster carrying only its name.
func clusterEvent(name string) client.Object {
	c := &clusterv1alpha1.Cluster{}
	c.Name = name
	c.SetGroupVersionKind(clusterv1alpha1.GroupVersion.WithKind("Cluster"))
	return c
}

// subscriber is one controller's queue of member events.
type subscriber struct {
	queue workqueue.TypedInterface[eventKey]

	mu sync.Mutex
	// pending holds the events of each queued key: the latest of each distinct set of
	// labels and annotations.
	pending map[eventKey][]client.Object
}

func newSubscriber(name string) *subscriber {
	return &subscriber{
		// The name gives the queue the workqueue metrics (workqueue_depth{name=...}): the
		// member events waiting for the controller.
		queue:   workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[eventKey]{Name: name}),
		pending: map[eventKey][]client.Object{},
	}
}

// add queues an event for k. It never blocks on the reader.
func (s *subscriber) add(k eventKey, o client.Object) {
	s.mu.Lock()
	objs := s.pending[k]
	if i := slices.IndexFunc(objs, func(p client.Object) bool { return sameMapping(p, o) }); i >= 0 {
		objs[i] = o
	} else {
		objs = append(objs, o)
	}
	s.pending[k] = objs
	s.mu.Unlock()
	// After pending is updated: a key already queued delivers o when it is taken; a key
	// being handled is queued again and delivers o after.
	s.queue.Add(k)
}

// sameMapping reports whether two events of one key map to the same requests.
func sameMapping(a, b client.Object) bool {
	return maps.Equal(a.GetLabels(), b.GetLabels()) && maps.Equal(a.GetAnnotations(), b.GetAnnotations())
}

// next waits for a queued key and returns it with its events (none when they were taken
// with an earlier turn of the key). The caller calls queue.Done(k) once it has handled them.
// ok is false once the subscriber is shut down.
func (s *subscriber) next() (k eventKey, objs []client.Object, ok bool) {
	k, shutdown := s.queue.Get()
	if shutdown {
		return k, nil, false
	}
	s.mu.Lock()
	objs = s.pending[k]
	delete(s.pending, k)
	s.mu.Unlock()
	return k, objs, true
}

// Source returns a controller source of member events for handler h: one for every connect
// and disconnect (the object is a *Cluster with only its name set) and one for every change
// of a watched member object (the object is the member object, as the member cache holds
// it), coalesced as described above, so h must map an event from its object's kind,
// namespace, name, labels and annotations alone. name names the subscriber (its queue's
// workqueue metrics); give each controller its own.
//
// The source subscribes when the controller starts it and unsubscribes when the controller
// stops: a controller that never starts (a leader-only controller on a standby) costs the
// producers nothing. It starts with a connection event for each member connected already.
func (m *Manager) Source(name string, h handler.EventHandler) source.Source {
	return &eventSource{m: m, name: name, h: h}
}

// HealthSource returns a controller source, as Source, of the events of a member that
// connects, disconnects or is found Down after FailureThreshold failed probes (the object
// is a *Cluster with only its name set).
func (m *Manager) HealthSource(name string, h handler.EventHandler) source.Source {
	return &eventSource{m: m, name: name, h: h, health: true}
}

// eventSource is the source Source and HealthSource return.
type eventSource struct {
	m      *Manager
	name   string
	h      handler.EventHandler
	health bool
}

func (s *eventSource) String() string { return fmt.Sprintf("member events source: %s", s.name) }

// Start subscribes and hands the subscriber's events to the handler until ctx ends.
func (s *eventSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	if s.h == nil {
		return fmt.Errorf("member events source %s: no handler", s.name)
	}
	sub := s.m.subscribe(s.name, s.health)
	go func() {
		<-ctx.Done()
		s.m.unsubscribe(sub)
		sub.queue.ShutDown()
	}()
	go func() {
		for {
			k, objs, ok := sub.next()
			if !ok {
				return
			}
			for _, o := range objs {
				s.h.Generic(ctx, event.GenericEvent{Object: o}, q)
			}
			sub.queue.Done(k)
		}
	}()
	return nil
}

// subscribe registers a subscriber of all events, or of health events alone, and queues a
// connection event for each member connected already: a controller that starts after a
// member connected (a new leader's, while every replica's connector keeps the members
// connected) still hears of it, as the informers' initial list tells a new handler of every
// object. The multi-cluster service controller sets a member up on that event alone.
func (m *Manager) subscribe(name string, health bool) *subscriber {
	sub := newSubscriber("member_events_" + name)
	m.subMu.Lock()
	defer m.subMu.Unlock()
	if health {
		m.healthSubs[sub] = struct{}{}
	} else {
		m.subs[sub] = struct{}{}
	}
	// Under subMu: a connection event sent meanwhile comes after these, not before.
	for _, member := range m.Names() {
		sub.add(clusterKey(member), clusterEvent(member))
	}
	return sub
}

func (m *Manager) unsubscribe(sub *subscriber) {
	m.subMu.Lock()
	defer m.subMu.Unlock()
	delete(m.subs, sub)
	delete(m.healthSubs, sub)
}

// notify queues an event for every subscriber, and for the health subscribers too when it
// is a member's connect or disconnect. It never blocks on a subscriber.
func (m *Manager) notify(k eventKey, o client.Object) {
	m.subMu.RLock()
	defer m.subMu.RUnlock()
	for sub := range m.subs {
		sub.add(k, o)
	}
	if _, ok := o.(*clusterv1alpha1.Cluster); ok {
		for sub := range m.healthSubs {
			sub.add(k, o)
		}
	}
}

// notifyHealth queues an event for the health subscribers alone.
func (m *Manager) notifyHealth(k eventKey, o client.Object) {
	m.subMu.RLock()
	defer m.subMu.RUnlock()
	for sub := range m.healthSubs {
		sub.add(k, o)
	}
}
