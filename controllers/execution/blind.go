package execution

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/member"
)

// A Work is seen blind when its member object was applied, or found as applied, by a request
// to the member itself while the member cache had not synced the object's kind: after a
// start or a reconnect (the first lists of a busy member take seconds), or while the watch of
// a kind was refused until the credential was granted its group. A change to the object
// before the cache's first list, its deletion above all, is then no event: the list just
// does not hold it. So, once the cache has synced the kind, each Work seen blind whose object
// the cache does not hold is looked at again; the objects the cache does hold come back as
// events of their own.

// blindKind is one member's kind whose cache had not synced when a Work was seen.
type blindKind struct {
	cluster string
	gvk     schema.GroupVersionKind
}

// blindWorks are the Works seen blind, by member and kind, with their objects' keys.
type blindWorks struct {
	mu    sync.Mutex
	kinds map[blindKind]map[types.NamespacedName]client.ObjectKey
}

// add records the Work; it reports whether the kind had no Work recorded yet (its cache's
// sync is then to be waited for).
func (b *blindWorks) add(k blindKind, work types.NamespacedName, obj client.ObjectKey) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kinds == nil {
		b.kinds = map[blindKind]map[types.NamespacedName]client.ObjectKey{}
	}
	works, waited := b.kinds[k]
	if !waited {
		works = map[types.NamespacedName]client.ObjectKey{}
		b.kinds[k] = works
	}
	works[work] = obj
	return !waited
}

// take forgets the kind's Works and returns them.
func (b *blindWorks) take(k blindKind) map[types.NamespacedName]client.ObjectKey {
	b.mu.Lock()
	defer b.mu.Unlock()
	works := b.kinds[k]
	delete(b.kinds, k)
	return works
}

// seen notes that the Work's objects were just applied or checked; those of a kind the
// member cache has not synced make the Work one seen blind.
func (r *Reconciler) seen(ctx context.Context, cluster string, m *member.Member, work types.NamespacedName, objs []*unstructured.Unstructured) {
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		if m.Synced(ctx, gvk) {
			continue
		}
		if r.rewatchGranted(ctx, cluster, m, gvk) {
			continue
		}
		k := blindKind{cluster: cluster, gvk: gvk}
		if r.blind.add(k, work, client.ObjectKeyFromObject(obj)) {
			m.WhenSynced(gvk, func(synced bool) { r.lookAgain(m, k, synced) })
		}
	}
}

// lookAgain queues the Works seen blind of k whose object the member cache, now synced,
// does not hold. A connection that ended first takes them along: its successor's connect
// event brings every Work of the member back.
func (r *Reconciler) lookAgain(m *member.Member, k blindKind, synced bool) {
	works := r.blind.take(k)
	if !synced {
		return
	}
	for work, key := range works {
		if !m.Holds(context.Background(), k.gvk, key) {
			r.queues.Add(k.cluster, work)
		}
	}
}

// rewatchGranted starts the member cache's watch of gvk afresh, once, after this reconciler
// granted the member credential the kind's group: the watch, started before, was refused,
// and would try again only after its backoff. It waits, at most cacheSyncWait, for the new
// watch to sync, so that the Work is not reported applied while a deletion of its object
// would go unseen; it reports whether the watch synced.
func (r *Reconciler) rewatchGranted(ctx context.Context, cluster string, m *member.Member, gvk schema.GroupVersionKind) bool {
	at, granted := r.grantedGroups.Load(cluster + "/" + gvk.Group)
	if !granted {
		return false
	}
	key := blindKind{cluster: cluster, gvk: gvk}
	if prev, done := r.rewatched.Load(key); done && !prev.Before(at) {
		return false
	}
	r.rewatched.Store(key, at)
	log := ctrl.LoggerFrom(ctx).V(1)
	if err := r.Members.Rewatch(ctx, cluster, gvk); err != nil {
		log.Info("Cannot watch the kind afresh after its group was granted", "kind", gvk.String(), "error", err.Error())
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, cacheSyncWait)
	defer cancel()
	err := m.WaitSynced(ctx, gvk)
	log.Info("Watched the kind afresh after its group was granted", "kind", gvk.String(), "synced", err == nil)
	return err == nil
}
