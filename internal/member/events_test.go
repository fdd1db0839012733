package member

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

var configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// fakeMember gives m a connected member whose cache is a fake one, watches ConfigMaps in it
// through m.Watch, and returns the informer whose events m routes to its subscribers.
func fakeMember(t *testing.T, m *Manager, name string) *controllertest.FakeInformer {
	t.Helper()
	ctx := context.Background()
	fi := &informertest.FakeInformers{Scheme: m.scheme}
	m.members[name] = &Member{Name: name, cache: fi, ctx: ctx, cancel: func() {}, watched: map[schema.GroupVersionKind]bool{}}
	if err := m.Watch(ctx, name, configMapGVK); err != nil {
		t.Fatal(err)
	}
	inf, err := fi.FakeInformerForKind(ctx, configMapGVK)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func configMap(name string, annotations map[string]string, rv string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations, ResourceVersion: rv}}
	cm.SetGroupVersionKind(configMapGVK)
	return cm
}

// recorder is a handler that records the events it gets, and can be held.
type recorder struct {
	mu sync.Mutex
	// seen counts the events of each member object; clusters lists the connection events.
	seen     map[types.NamespacedName]int
	clusters []string
	events   []event.GenericEvent
	// hold, when set, is waited on by each event before it is recorded, and entered told
	// that an event waits on it.
	hold    chan struct{}
	entered chan struct{}
}

func newRecorder() *recorder { return &recorder{seen: map[types.NamespacedName]int{}} }

func (r *recorder) handler() handler.EventHandler {
	return handler.Funcs{GenericFunc: func(ctx context.Context, e event.GenericEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if r.hold != nil {
			select {
			case r.entered <- struct{}{}:
			default:
			}
			select {
			case <-r.hold:
			case <-ctx.Done():
				return
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, e)
		if _, ok := e.Object.(*clusterv1alpha1.Cluster); ok {
			r.clusters = append(r.clusters, e.Object.GetName())
			return
		}
		r.seen[types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}]++
	}}
}

// distinct returns how many member objects the recorder got events of.
func (r *recorder) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func start(t *testing.T, ctx context.Context, m *Manager, name string, h handler.EventHandler) {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	if err := m.Source(name, h).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
}

// 1,100 member events with one subscriber that never reads (a controller stuck, or one
// whose source was started and is never served) and one that was never started (a
// leader-only controller on a standby): the member's informer never waits, and the reading
// subscriber gets every object. The old delivery (a blocking send on a channel of 1,024
// per subscriber) held the informer at the 1,025th event.
func TestEventsNeverWaitOnAReader(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := NewManager(testScheme(t), Options{})
	inf := fakeMember(t, m, "member1")

	stuck := newRecorder()
	stuck.hold = make(chan struct{}) // never closed: the handler never returns
	start(t, ctx, m, "stuck", stuck.handler())
	standby := newRecorder()
	_ = m.Source("standby", standby.handler()) // set up, never started
	reader := newRecorder()
	start(t, ctx, m, "reader", reader.handler())

	const n = 1100
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := range n {
			inf.Add(configMap(fmt.Sprintf("cm-%d", i), nil, "1"))
		}
		for i := range n { // and an update of each: 2,200 events
			inf.Update(configMap(fmt.Sprintf("cm-%d", i), nil, "1"), configMap(fmt.Sprintf("cm-%d", i), nil, "2"))
		}
	}()
	select {
	case <-produced:
	case <-time.After(10 * time.Second):
		t.Fatalf("the member informer was held by a subscriber: %d of %d objects delivered to the reader", reader.distinct(), n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for reader.distinct() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := reader.distinct(); got != n {
		t.Fatalf("the reader got events of %d objects, want %d", got, n)
	}
	reader.mu.Lock()
	clusters := reader.clusters
	reader.mu.Unlock()
	if diff := cmp.Diff([]string{"member1"}, clusters); diff != "" {
		t.Errorf("connection events: a subscriber starts with one for each member connected before (-want +got):\n%s", diff)
	}
	if got := standby.distinct(); got != 0 {
		t.Errorf("the subscriber never started got %d events", got)
	}
	m.subMu.RLock()
	subs := len(m.subs)
	m.subMu.RUnlock()
	if subs != 2 {
		t.Errorf("%d subscribers, want the 2 started (a source set up but never started does not subscribe)", subs)
	}

	// A stopped controller's source unsubscribes.
	cancel()
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		m.subMu.RLock()
		subs = len(m.subs)
		m.subMu.RUnlock()
		if subs == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if subs != 0 {
		t.Errorf("%d subscribers left after their controllers stopped", subs)
	}
}

// Events queued together for one object merge into its latest, unless their labels or
// annotations differ (they may map to other requests): those are all delivered. An event that
// comes while its object's earlier one is being handled is delivered after it.
func TestEventsCoalesceWithoutLosingAMapping(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := NewManager(testScheme(t), Options{})
	r := newRecorder()
	r.hold, r.entered = make(chan struct{}), make(chan struct{}, 1)
	start(t, ctx, m, "reader", r.handler()) // before the members connect: no events of them yet
	inf := fakeMember(t, m, "member1")
	other := fakeMember(t, m, "member2")

	work := func(w string) map[string]string { return map[string]string{"work": w} }
	inf.Add(configMap("first", nil, "1")) // taken at once, and held in the handler
	<-r.entered
	inf.Update(nil, configMap("first", nil, "2")) // while "first" is handled
	inf.Add(configMap("x", work("a"), "1"))
	inf.Update(nil, configMap("x", work("b"), "2"))
	inf.Update(nil, configMap("x", work("a"), "3"))
	inf.Update(nil, configMap("x", work("a"), "4"))
	other.Add(configMap("x", work("a"), "1")) // the same object in another member
	m.notify(clusterKey("member1"), clusterEvent("member1"))
	m.notify(clusterKey("member1"), clusterEvent("member1"))
	close(r.hold)

	type got struct{ Cluster, Name, Work, RV string }
	want := []got{
		{"", "first", "", "1"},
		{"", "x", "a", "4"}, {"", "x", "b", "2"}, // member1's x: a (rv 1, 3, 4) merged, b apart
		{"", "x", "a", "1"},     // member2's x
		{"member1", "", "", ""}, // two connection events merged
		{"", "first", "", "2"},  // queued again behind the others
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		n := len(r.events)
		r.mu.Unlock()
		if n >= len(want) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // nothing more comes
	r.mu.Lock()
	defer r.mu.Unlock()
	var have []got
	for _, e := range r.events {
		if _, ok := e.Object.(*clusterv1alpha1.Cluster); ok {
			have = append(have, got{Cluster: e.Object.GetName()})
			continue
		}
		have = append(have, got{Name: e.Object.GetName(), Work: e.Object.GetAnnotations()["work"], RV: e.Object.GetResourceVersion()})
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("events delivered (-want +got):\n%s", diff)
	}
}

// A health source gets the connection events (the members connected before it started,
// then each connect, disconnect or Down), never the member objects' events.
func TestHealthSourceGetsConnectionEventsOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := NewManager(testScheme(t), Options{})
	inf := fakeMember(t, m, "member1")
	r := newRecorder()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := m.HealthSource("health", r.handler()).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	wait := func(n int) []string {
		deadline := time.Now().Add(5 * time.Second)
		for {
			r.mu.Lock()
			clusters := slices.Clone(r.clusters)
			r.mu.Unlock()
			if len(clusters) >= n || time.Now().After(deadline) {
				return clusters
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if diff := cmp.Diff([]string{"member1"}, wait(1)); diff != "" {
		t.Errorf("at start (-want +got):\n%s", diff)
	}
	inf.Add(configMap("cm", nil, "1"))
	m.notify(clusterKey("member2"), clusterEvent("member2"))
	m.notifyHealth(clusterKey("member3"), clusterEvent("member3"))
	if diff := cmp.Diff([]string{"member1", "member2", "member3"}, wait(3)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := r.distinct(); got != 0 {
		t.Errorf("the health source got events of %d member objects", got)
	}
}
