// Package handoff passes the templates the detector has just read to the binding controller
// of the same process, so that one version of a template is read from the host once, not
// once per stage of the chain.
//
// A template is keyed by its UID and resourceVersion. The object at a resourceVersion never
// changes, so a hand-off is never stale: a binding controller that asks for the version its
// binding names gets exactly what the detector read, or nothing and reads the host itself.
// Entries are taken once and expire, so the hand-off holds at most Size templates for at
// most TTL, whatever the load.
package handoff

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
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

func init() { metrics.Registry.MustRegister(handoffs) }

// Templates is a bounded, expiring hand-off of templates. A nil *Templates holds nothing.
type Templates struct {
	entries *cache.LRUExpireCache
	ttl     time.Duration
}

// New returns a hand-off of at most size templates, each kept at most ttl.
func New(size int, ttl time.Duration) *Templates {
	if size <= 0 {
		size = DefaultSize
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Templates{entries: cache.NewLRUExpireCache(size), ttl: ttl}
}

type key struct {
	uid             types.UID
	resourceVersion string
}

// Put offers a template read whole from the host. The caller must not change obj afterwards.
func (t *Templates) Put(obj *unstructured.Unstructured) {
	if t == nil || obj == nil || obj.GetUID() == "" || obj.GetResourceVersion() == "" {
		return
	}
	t.entries.Add(key{obj.GetUID(), obj.GetResourceVersion()}, obj, t.ttl)
}

// Take returns the template of that UID at that resourceVersion, if it was offered and has not
// expired or been taken. The caller owns the object returned.
func (t *Templates) Take(uid types.UID, resourceVersion string) (*unstructured.Unstructured, bool) {
	if t == nil || uid == "" || resourceVersion == "" {
		return nil, false
	}
	k := key{uid, resourceVersion}
	v, ok := t.entries.Get(k)
	if !ok {
		handoffs.WithLabelValues("miss").Inc()
		return nil, false
	}
	t.entries.Remove(k)
	handoffs.WithLabelValues("hit").Inc()
	return v.(*unstructured.Unstructured), true
}

// Len is the number of templates held and not expired.
func (t *Templates) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries.Keys())
}
