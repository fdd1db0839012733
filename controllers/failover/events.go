package failover

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/failover"
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
			r.mu.Lock()
			delete(r.told, r.key(rb, "blocked/"+o.Task.FromCluster))
			r.mu.Unlock()
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

// key names what is remembered of a binding: by its namespace/name (so that forget finds it)
// and its UID (so that a binding created again under the name starts afresh).
func (r *Reconciler) key(rb client.Object, what string) string {
	return client.ObjectKeyFromObject(rb).String() + "/" + string(rb.GetUID()) + "/" + what
}

// once records an event on the binding, related to a cluster, the first time what is seen.
func (r *Reconciler) once(rb client.Object, cluster, what, typ, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = map[string]bool{}
	}
	k := r.key(rb, what)
	if r.told[k] {
		return
	}
	r.told[k] = true
	r.Recorder.Eventf(rb, related(cluster), typ, reason, "Failover", format, args...)
}

// forget drops what is remembered of a binding that is gone.
func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range []map[string]bool{r.told} {
		for k := range m {
			if strings.HasPrefix(k, name+"/") {
				delete(m, k)
			}
		}
	}
	for k := range r.unhealthySince {
		if strings.HasPrefix(k, name+"/") {
			delete(r.unhealthySince, k)
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
