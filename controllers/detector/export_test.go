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
// bindings c holds, and returns the order the detector's workers would take them in.
func InitialOrder(c cache.Cache, templates []InitialTemplate) []Key {
	q := priorityqueue.New[Key]("initial-order")
	defer q.ShutDown()
	w := &watcher{cache: c, queue: q}
	for _, t := range templates {
		w.enqueueInitial(t.Key, t.UID)
	}
	out := make([]Key, 0, len(templates))
	for range templates {
		k, _ := q.Get()
		q.Done(k)
		out = append(out, k)
	}
	return out
}
