package detector

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// InitialTemplate is a template of a watch's initial list: its key and UID.
type InitialTemplate struct {
	Key Key
	UID types.UID
}

// InitialOrder queues the templates, in order, as a watch's initial list does, over the
// bindings c holds, and returns the order the detector's workers would take them in. With
// beforeSync, the list is delivered before the cache's bindings have synced: queued tells
// how many templates were queued before they did (the watcher holds them until then).
func InitialOrder(c cache.Cache, templates []InitialTemplate, beforeSync bool) (order []Key, queued int) {
	q := priorityqueue.New[Key]("initial-order")
	defer q.ShutDown()
	w := &watcher{cache: c, queue: q}
	if !beforeSync {
		w.bindingsHaveSynced(true)
	}
	for _, t := range templates {
		w.enqueueInitial(t.Key, t.UID)
	}
	queued = q.Len()
	if beforeSync {
		w.bindingsHaveSynced(true)
	}
	out := make([]Key, 0, len(templates))
	for range templates {
		k, _ := q.Get()
		q.Done(k)
		out = append(out, k)
	}
	return out, queued
}
