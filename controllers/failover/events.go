package failover

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/failover"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// recordChanges tells what one write did: clusters left, tasks done.
func (r *Reconciler) recordChanges(rb client.Object, spec *workv1alpha2.ResourceBindingSpec, leaves []leave, outcomes []failover.Outcome) {
	for _, l := range leaves {
		mode := l.PurgeMode
		if mode == "" {
			mode = "Gracefully"
		}
		r.event(rb, spec, l.Cluster, corev1.EventTypeWarning, EventReasonEvictWorkloadFromClusterSucceed,
			"Evicted from cluster %s (%s): %s; purgeMode %s", l.Cluster, l.Producer, l.why, mode)
	}
	for _, o := range outcomes {
		if o.Done {
			what := "its Work there is removed"
			if !failover.KeepsWork(&o.Task) {
				what = "its Work there was removed at eviction"
			}
			r.event(rb, spec, o.Task.FromCluster, corev1.EventTypeNormal, EventReasonGracefulEvictionDone,
				"Eviction from cluster %s is done, %s: %s", o.Task.FromCluster, what, o.Why)
		}
	}
	r.recordWaits(rb, outcomes)
}

// recordWaits says, once, that an overdue task stays because the workload has nowhere else
// to run.
func (r *Reconciler) recordWaits(rb client.Object, outcomes []failover.Outcome) {
	for _, o := range outcomes {
		if o.Blocked {
			r.once(rb, o.Task.FromCluster, "blocked/"+o.Task.FromCluster, corev1.EventTypeWarning, EventReasonGracefulEvictionBlocked, "%s", o.Why)
		}
	}
}

// once records an event on the binding, related to a cluster, the first time what is seen.
func (r *Reconciler) once(rb client.Object, cluster, what, typ, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.rememberLocked(rb)
	if m.told[what] {
		return
	}
	if m.told == nil {
		m.told = map[string]bool{}
	}
	m.told[what] = true
	r.Recorder.Eventf(rb, related(cluster), typ, reason, "Failover", format, args...)
}

// keepTold forgets, of the events told once whose what starts with prefix, those for which
// holds is false: what they said is over, and is said again if it comes back.
func (r *Reconciler) keepTold(rb client.Object, prefix string, holds func(what string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.remembered[client.ObjectKeyFromObject(rb)]
	if m == nil || m.uid != rb.GetUID() {
		return
	}
	for what := range m.told {
		if strings.HasPrefix(what, prefix) && !holds(what) {
			delete(m.told, what)
		}
	}
	r.tidyLocked(rb)
}

// rememberLocked returns what is kept of the binding, made empty when there is nothing yet
// or only of an earlier binding of the name. r.mu is held.
func (r *Reconciler) rememberLocked(rb client.Object) *remembered {
	key := client.ObjectKeyFromObject(rb)
	if m := r.remembered[key]; m != nil && m.uid == rb.GetUID() {
		return m
	}
	if r.remembered == nil {
		r.remembered = map[types.NamespacedName]*remembered{}
	}
	m := &remembered{uid: rb.GetUID()}
	r.remembered[key] = m
	return m
}

// tidyLocked drops the binding's entry when nothing is left in it. r.mu is held.
func (r *Reconciler) tidyLocked(rb client.Object) {
	key := client.ObjectKeyFromObject(rb)
	if m := r.remembered[key]; m != nil && len(m.told) == 0 && len(m.unhealthySince) == 0 {
		delete(r.remembered, key)
	}
}

// forget drops what is kept of a binding that is gone or that failover no longer looks at.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.remembered, key)
}

// forgetShard drops what is kept of the bindings of a shard this replica no longer holds.
func (r *Reconciler) forgetShard(k int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key := range r.remembered {
		if shard.Of(shard.Key(reconcile.Request{NamespacedName: key}), r.Shards.Shards()) == k {
			delete(r.remembered, key)
		}
	}
}

// event records on the binding and on its template, related to the cluster (so that events
// of one reason about two clusters are two events, not one series).
func (r *Reconciler) event(rb client.Object, spec *workv1alpha2.ResourceBindingSpec, cluster, typ, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.eventLocked(rb, spec, cluster, typ, reason, format, args...)
}

func (r *Reconciler) eventLocked(rb client.Object, spec *workv1alpha2.ResourceBindingSpec, cluster, typ, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.Recorder.Eventf(rb, related(cluster), typ, reason, "Failover", "%s", msg)
	if tmpl := template(spec); tmpl != nil {
		r.Recorder.Eventf(tmpl, related(cluster), typ, reason, "Failover", "%s", msg)
	}
}

// related is the Cluster an event is about.
func related(cluster string) runtime.Object {
	if cluster == "" {
		return nil
	}
	c := &clusterv1alpha1.Cluster{}
	c.APIVersion, c.Kind = clusterv1alpha1.GroupVersion.String(), "Cluster"
	c.Name = cluster
	return c
}

// template is a reference to the binding's template good enough for an Event.
func template(spec *workv1alpha2.ResourceBindingSpec) client.Object {
	res := spec.Resource
	if res.Kind == "" || res.Name == "" || res.UID == "" {
		return nil
	}
	o := &metav1.PartialObjectMetadata{}
	o.APIVersion, o.Kind = res.APIVersion, res.Kind
	o.Namespace, o.Name, o.UID = res.Namespace, res.Name, res.UID
	if strings.TrimSpace(o.APIVersion) == "" {
		return nil
	}
	return o
}
