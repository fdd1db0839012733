// Package frq is the pure core of the FederatedResourceQuota controller: the Works that carry
// a quota's staticAssignments to their members (one ResourceQuota each), and the status
// aggregated from what those Works report. It does no I/O.
package frq

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/federatedquota"
)

// Labels on the Works of a FederatedResourceQuota (Karmada's), naming it.
const (
	NamespaceLabel = "federatedresourcequota.karmada.io/namespace"
	NameLabel      = "federatedresourcequota.karmada.io/name"
)

// Finalizer on a FederatedResourceQuota: its Works (and so the member ResourceQuotas) are
// removed before it goes.
const Finalizer = "flotilla.io/federated-resource-quota"

// WorkName is the name of the Work of a quota in each execution namespace. It differs from
// the name of a propagated ResourceQuota template's Work of the same name.
func WorkName(namespace, name string) string {
	return bindings.WorkName("FederatedResourceQuota", namespace, name)
}

// WorkLabels select the Works of a quota.
func WorkLabels(namespace, name string) map[string]string {
	return map[string]string{NamespaceLabel: namespace, NameLabel: name}
}

// Desired returns the Work of each static assignment, in spec order: in the member's
// execution namespace, a ResourceQuota named as the quota, in its namespace, with the
// assignment's hard limits.
func Desired(q *policyv1alpha1.FederatedResourceQuota) ([]*workv1alpha1.Work, error) {
	out := make([]*workv1alpha1.Work, 0, len(q.Spec.StaticAssignments))
	name := WorkName(q.Namespace, q.Name)
	for _, a := range q.Spec.StaticAssignments {
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
			Namespace: wellknown.ExecutionNamespace(a.ClusterName),
			Name:      name,
			Labels:    WorkLabels(q.Namespace, q.Name),
		}}
		w.Labels[wellknown.ManagedLabel] = wellknown.ManagedLabelValue
		rq := &corev1.ResourceQuota{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: q.Namespace, Name: q.Name,
				Labels: map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue, NamespaceLabel: q.Namespace, NameLabel: q.Name},
				Annotations: map[string]string{
					wellknown.WorkNamespaceAnnotation: w.Namespace, wellknown.WorkNameAnnotation: w.Name,
				},
			},
			Spec: corev1.ResourceQuotaSpec{Hard: a.Hard},
		}
		raw, err := json.Marshal(rq)
		if err != nil {
			return nil, fmt.Errorf("encoding the ResourceQuota of cluster %s: %w", a.ClusterName, err)
		}
		w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
		out = append(out, w)
	}
	return out, nil
}

// Report is the status of a quota and what it says about each member.
type Report struct {
	// Status is the quota's status, conditions included.
	Status policyv1alpha1.FederatedResourceQuotaStatus
	// Ready is the Ready condition (also in Status.Conditions).
	Ready metav1.Condition
}

// Aggregate builds the status of q from the Works of its members (by cluster name) and the
// errors met writing them (by cluster name): aggregatedStatus the reflected status of each
// assigned member's ResourceQuota, overallUsed their used summed, overall spec.overall. Ready
// is True when every assigned member reports its ResourceQuota; otherwise False, reason
// QuotaApplyFailed when a Work could not be written or applied, else QuotaPending, naming the
// members. The quota's other conditions are kept; Ready keeps its lastTransitionTime while its
// status does not change.
func Aggregate(q *policyv1alpha1.FederatedResourceQuota, works map[string]*workv1alpha1.Work, writeErrs map[string]string) Report {
	st := policyv1alpha1.FederatedResourceQuotaStatus{Overall: q.Spec.Overall, ObservedGeneration: q.Generation}
	var failed, pending []string
	var used corev1.ResourceList
	for _, a := range q.Spec.StaticAssignments {
		c := a.ClusterName
		if msg, ok := writeErrs[c]; ok {
			failed = append(failed, c+": "+msg)
			continue
		}
		w := works[c]
		if w == nil {
			pending = append(pending, c+": not written yet")
			continue
		}
		applied := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
		switch {
		case applied != nil && applied.Status == metav1.ConditionFalse:
			failed = append(failed, c+": "+applied.Message)
			continue
		case applied == nil || applied.Status != metav1.ConditionTrue || applied.ObservedGeneration != w.Generation:
			pending = append(pending, c+": not applied yet")
			continue
		}
		rqs, err := reflected(w)
		if err != nil || rqs == nil {
			reason := "status not collected yet"
			if err != nil {
				reason = err.Error()
			}
			pending = append(pending, c+": "+reason)
			continue
		}
		st.AggregatedStatus = append(st.AggregatedStatus, policyv1alpha1.ClusterQuotaStatus{ClusterName: c, ResourceQuotaStatus: *rqs})
		used = federatedquota.Add(used, rqs.Used)
	}
	st.OverallUsed = used
	ready := metav1.Condition{Type: policyv1alpha1.FederatedResourceQuotaConditionReady, ObservedGeneration: q.Generation}
	switch {
	case len(failed) > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, policyv1alpha1.ReasonQuotaApplyFailed
		ready.Message = "Failed: " + join(failed)
		if len(pending) > 0 {
			ready.Message += ". Pending: " + join(pending)
		}
	case len(pending) > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, policyv1alpha1.ReasonQuotaPending
		ready.Message = "Pending: " + join(pending)
	case len(q.Spec.StaticAssignments) == 0:
		ready.Status, ready.Reason = metav1.ConditionTrue, policyv1alpha1.ReasonQuotaApplied
		ready.Message = "No static assignments: overall is enforced when scheduling"
	default:
		ready.Status, ready.Reason = metav1.ConditionTrue, policyv1alpha1.ReasonQuotaApplied
		ready.Message = fmt.Sprintf("ResourceQuota applied and reported by %d member(s)", len(q.Spec.StaticAssignments))
	}
	st.Conditions = slices.Clone(q.Status.Conditions)
	meta.SetStatusCondition(&st.Conditions, ready)
	return Report{Status: st, Ready: *meta.FindStatusCondition(st.Conditions, ready.Type)}
}

// reflected is the member ResourceQuota's status the Work reflects; nil when none is yet.
func reflected(w *workv1alpha1.Work) (*corev1.ResourceQuotaStatus, error) {
	for _, ms := range w.Status.ManifestStatuses {
		if ms.Identifier.Kind != "ResourceQuota" || ms.Status == nil || len(ms.Status.Raw) == 0 {
			continue
		}
		out := &corev1.ResourceQuotaStatus{}
		if err := json.Unmarshal(ms.Status.Raw, out); err != nil {
			return nil, fmt.Errorf("reading the reflected ResourceQuota status: %w", err)
		}
		return out, nil
	}
	return nil, nil
}

// join names at most 10 members, each part cut to 200 bytes.
func join(parts []string) string {
	const most = 10
	extra := 0
	if len(parts) > most {
		extra, parts = len(parts)-most, parts[:most]
	}
	cut := make([]string, len(parts))
	for i, p := range parts {
		if len(p) > 200 {
			p = p[:200] + "..."
		}
		cut[i] = p
	}
	s := strings.Join(cut, "; ")
	if extra > 0 {
		s += fmt.Sprintf("; and %d more", extra)
	}
	return s
}
