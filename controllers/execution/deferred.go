package execution

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-io/flotilla/internal/member"
)

// A check is the look a Work gets when nothing is remembered of its apply (after a start, a
// reconnect or a shard taken over) while its Applied condition says its generation is
// applied: is the member object still as it was applied? The member cache answers it
// without a request once it has synced the object's kind (unchangedCached). Before that, the
// answer would be a read of the member per Work: after a restart with 10,000 templates the
// Works' checks come before the member caches' own first lists, and the reads slowed those
// lists down. So a check waits for the sync instead, without holding a worker: the Work is
// queued again, behind new and changed Works, once its member cache has synced the kind. Its
// condition stays as it is meanwhile (the object was applied; the check only confirms it).
//
// A Work whose apply is remembered waits the same way when its member cache has not synced
// the kind (upToDate): a new connection after a reconnect lists every kind afresh, and each
// such Work used to hold a worker for up to cacheSyncWait and then be applied again, with a
// read of the member, though nothing had changed.
//
// A kind whose list keeps failing (a custom resource whose conversion webhook is down) is
// waited for at most checkSyncWait per connection; its checks then read the member, as
// before.

// checkSyncWait bounds how long, per member connection and kind, checks wait for the member
// cache to sync the kind before they read the member instead.
const checkSyncWait = time.Minute

// waitingChecks are the checks waiting for member caches to sync their kinds.
type waitingChecks struct {
	mu    sync.Mutex
	kinds map[blindKind]*kindChecks
}

// kindChecks are the checks waiting for one member connection's cache to sync one kind.
type kindChecks struct {
	// member is the connection whose cache is waited for: a new connection waits afresh.
	member *member.Member
	works  map[types.NamespacedName]struct{}
	// gaveUp is set once the cache did not sync within checkSyncWait: the connection's
	// checks of the kind then read the member.
	gaveUp bool
}

// add records that work's check waits for m's cache to sync k's kind. It reports whether the
// check is to wait (false: the wait for this connection was given up) and whether the kind
// had no check waiting yet (the sync is then to be waited for).
func (c *waitingChecks) add(k blindKind, m *member.Member, work types.NamespacedName) (wait, first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds == nil {
		c.kinds = map[blindKind]*kindChecks{}
	}
	kc := c.kinds[k]
	if kc != nil && kc.member == m && kc.gaveUp {
		return false, false
	}
	if kc == nil || kc.member != m {
		// None yet, or of an earlier connection: its checks came back with the new
		// connection's event.
		kc = &kindChecks{member: m, works: map[types.NamespacedName]struct{}{}}
		c.kinds[k] = kc
		first = true
	}
	kc.works[work] = struct{}{}
	return true, first
}

// take returns the checks of k waiting for m's cache and forgets them. gaveUp marks the
// connection's wait for the kind as given up, so that the next checks read the member.
func (c *waitingChecks) take(k blindKind, m *member.Member, gaveUp bool) []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	kc := c.kinds[k]
	if kc == nil || kc.member != m {
		return nil
	}
	out := slices.Collect(maps.Keys(kc.works))
	kc.works = nil
	if gaveUp {
		kc.gaveUp = true
	} else {
		delete(c.kinds, k)
	}
	return out
}

// forget drops the checks of a member whose Cluster is gone.
func (c *waitingChecks) forget(cluster string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.kinds {
		if k.cluster == cluster {
			delete(c.kinds, k)
		}
	}
}

// checkLater reports whether the check of work waits for m's cache to sync gvk: the cache
// has not synced it, and has not failed to within checkSyncWait on this connection. The
// first check of a kind to wait starts the wait; when the kind syncs, or the wait is given
// up, the waiting Works are queued again (behind new and changed Works). A connection that
// ends first takes them along: its successor's connect event brings every Work of the member
// back.
func (r *Reconciler) checkLater(ctx context.Context, cluster string, m *member.Member, work types.NamespacedName, gvk schema.GroupVersionKind) bool {
	if m.Synced(ctx, gvk) {
		return false
	}
	k := blindKind{cluster: cluster, gvk: gvk}
	wait, first := r.checks.add(k, m, work)
	if !wait {
		return false
	}
	if first {
		go r.checksAfterSync(m, k)
	}
	return true
}

// checksAfterSync waits, at most checkSyncWait, for m's cache to sync k's kind and queues the
// checks that wait for it; nothing is queued when the connection ends first.
func (r *Reconciler) checksAfterSync(m *member.Member, k blindKind) {
	ctx, cancel := context.WithTimeout(context.Background(), checkSyncWait)
	defer cancel()
	err := m.WaitSynced(ctx, k.gvk)
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	if err != nil && !timedOut {
		r.checks.take(k, m, false)
		return
	}
	for _, work := range r.checks.take(k, m, err != nil) {
		r.queues.AddLow(k.cluster, work)
	}
}
