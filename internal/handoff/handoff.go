// Package handoff passes the templates the detector has just read to the binding controller
// of the same process, so that one version of a template is read from the host once, not
// once per stage of the chain.
//
// A template is keyed by its UID and resourceVersion. The object at a resourceVersion never
// changes, so a hand-off is never stale: a binding controller that asks for the version its
// binding names gets exactly what the detector read, or nothing and reads the host itself.
// Entries are taken once and expire, so the hand-off holds at most Size templates for at
// most TTL, whatever the load; expired ones are dropped on every use and by Run's sweeps.
package handoff

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	// DefaultSize bounds the templates held at once.
	DefaultSize = 1024
	// DefaultTTL is how long a template waits for the binding controller.
	DefaultTTL = 30 * time.Second
)

var handoffs = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "flotilla_template_handoff_total",
	Help: "Templates the binding controller asked the detector's hand-off for, by result (hit: no host read; miss: read from the host).",
}, []string{"result"})

var watched = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "flotilla_template_watch_total",
	Help: "Templates the detector needed whole, by result (hit: the version its watch had just seen, no host read; miss: read from the host).",
}, []string{"result"})

func init() { metrics.Registry.MustRegister(handoffs, watched) }

// Templates is a bounded, expiring hand-off of templates. A nil *Templates holds nothing.
type Templates struct {
	mu      sync.Mutex
	entries map[key]*list.Element
	// order holds the entries oldest first: expired ones are dropped from its front.
	order *list.List
	size  int
	ttl   time.Duration
	now   func() time.Time
	// latest, when set, holds one version per UID: offering a newer one replaces it (a
	// template's later changes do not push other templates out).
	latest map[types.UID]key
	// counter counts Take's hits and misses.
	counter *prometheus.CounterVec
}

type key struct {
	uid             types.UID
	resourceVersion string
}

type entry struct {
	key     key
	obj     *unstructured.Unstructured
	expires time.Time
}

// New returns a hand-off of at most size templates, each kept at most ttl.
func New(size int, ttl time.Duration) *Templates {
	if size <= 0 {
		size = DefaultSize
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Templates{entries: map[key]*list.Element{}, order: list.New(), size: size, ttl: ttl, now: time.Now, counter: handoffs}
}

// NewLatest returns a hand-off of at most size templates, each kept at most ttl, that holds
// one version per template: the last offered. It is the detector's store of the templates its
// watches have just seen whole (flotilla_template_watch_total counts its hits and misses).
func NewLatest(size int, ttl time.Duration) *Templates {
	t := New(size, ttl)
	t.latest, t.counter = map[types.UID]key{}, watched
	return t
}

// Put offers a template read whole from the host. The caller must not change obj afterwards.
func (t *Templates) Put(obj *unstructured.Unstructured) {
	if t == nil || obj == nil || obj.GetUID() == "" || obj.GetResourceVersion() == "" {
		return
	}
	k := key{obj.GetUID(), obj.GetResourceVersion()}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	if el, ok := t.entries[k]; ok {
		t.remove(el)
	}
	if t.latest != nil {
		if old, ok := t.latest[k.uid]; ok {
			if el, ok := t.entries[old]; ok {
				t.remove(el)
			}
		}
		t.latest[k.uid] = k
	}
	t.entries[k] = t.order.PushBack(&entry{key: k, obj: obj, expires: now.Add(t.ttl)})
	for t.order.Len() > t.size {
		t.remove(t.order.Front())
	}
}

// Take returns the template of that UID at that resourceVersion, if it was offered and has not
// expired or been taken. The caller owns the object returned.
func (t *Templates) Take(uid types.UID, resourceVersion string) (*unstructured.Unstructured, bool) {
	if t == nil || uid == "" || resourceVersion == "" {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(t.now())
	el, ok := t.entries[key{uid, resourceVersion}]
	if !ok {
		t.counter.WithLabelValues("miss").Inc()
		return nil, false
	}
	t.remove(el)
	t.counter.WithLabelValues("hit").Inc()
	return el.Value.(*entry).obj, true
}

// Sweep drops the expired templates. Put and Take sweep too; a manager calls it now and then
// so that an idle hand-off lets go of what nobody took.
func (t *Templates) Sweep() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(t.now())
}

// Run sweeps every ttl until ctx ends.
func (t *Templates) Run(ctx context.Context) error {
	if t == nil {
		return nil
	}
	tick := time.NewTicker(t.ttl)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			t.Sweep()
		}
	}
}

func (t *Templates) sweep(now time.Time) {
	for el := t.order.Front(); el != nil && !now.Before(el.Value.(*entry).expires); el = t.order.Front() {
		t.remove(el)
	}
}

func (t *Templates) remove(el *list.Element) {
	t.order.Remove(el)
	k := el.Value.(*entry).key
	delete(t.entries, k)
	if t.latest != nil && t.latest[k.uid] == k {
		delete(t.latest, k.uid)
	}
}

// Len is the number of templates held and not expired.
func (t *Templates) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(t.now())
	return t.order.Len()
}
