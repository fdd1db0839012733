package clusterstatus

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// MaxUnschedulableWorkloads bounds ResourceSummary.UnschedulableWorkloads.
const MaxUnschedulableWorkloads = 64

// podTemplateHashLabel is the label a Deployment's ReplicaSet and its Pods carry, whose value
// ends the ReplicaSet's name ("<deployment>-<hash>").
const podTemplateHashLabel = "pod-template-hash"

// workloadKey names a workload in one member.
type workloadKey struct {
	apiVersion, kind, namespace, name string
}

// unschedulable counts, per workload, the Pods its member's scheduler could not place.
type unschedulable map[workloadKey]*clusterv1alpha1.UnschedulableWorkload

// UnschedulableSince returns when a Pod became unschedulable: the last transition of its
// PodScheduled condition when that is False with reason Unschedulable; false when the Pod is
// bound, terminal, or not (or not yet) found unschedulable by the scheduler.
func UnschedulableSince(p *corev1.Pod) (metav1.Time, bool) {
	if p.Spec.NodeName != "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return metav1.Time{}, false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			ok := c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
			return c.LastTransitionTime, ok
		}
	}
	return metav1.Time{}, false
}

// WorkloadOf returns the workload a Pod belongs to: its controller, or for the Pods of a
// Deployment's ReplicaSet (the ReplicaSet is named after the Deployment and the Pods'
// pod-template-hash) the Deployment. False for a Pod without a controller.
func WorkloadOf(p *corev1.Pod) (apiVersion, kind, name string, ok bool) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil {
		return "", "", "", false
	}
	if ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.APIVersion, "apps/") {
		if hash := p.Labels[podTemplateHashLabel]; hash != "" {
			if deploy, found := strings.CutSuffix(ref.Name, "-"+hash); found && deploy != "" {
				return ref.APIVersion, "Deployment", deploy, true
			}
		}
	}
	return ref.APIVersion, ref.Kind, ref.Name, true
}

// add counts the Pod when it is unschedulable.
func (u unschedulable) add(p *corev1.Pod) {
	since, ok := UnschedulableSince(p)
	if !ok {
		return
	}
	apiVersion, kind, name, ok := WorkloadOf(p)
	if !ok {
		return
	}
	key := workloadKey{apiVersion, kind, p.Namespace, name}
	w := u[key]
	if w == nil {
		w = &clusterv1alpha1.UnschedulableWorkload{APIVersion: apiVersion, Kind: kind, Namespace: p.Namespace, Name: name, Since: since}
		u[key] = w
	}
	w.Replicas++
	if since.After(w.Since.Time) {
		w.Since = since
	}
}

// list returns at most MaxUnschedulableWorkloads workloads, the most unschedulable Pods
// first, then by namespace, name and kind; nil when there are none.
func (u unschedulable) list() []clusterv1alpha1.UnschedulableWorkload {
	if len(u) == 0 {
		return nil
	}
	out := make([]clusterv1alpha1.UnschedulableWorkload, 0, len(u))
	for _, w := range u {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.UnschedulableWorkload) int {
		return cmp.Or(cmp.Compare(b.Replicas, a.Replicas), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.APIVersion, b.APIVersion))
	})
	if len(out) > MaxUnschedulableWorkloads {
		out = out[:MaxUnschedulableWorkloads]
	}
	return out
}
