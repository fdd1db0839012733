package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={karmada-io}
// +kubebuilder:printcolumn:name="OVERALL",type=string,JSONPath=`.status.overall`
// +kubebuilder:printcolumn:name="OVERALL_USED",type=string,JSONPath=`.status.overallUsed`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// FederatedResourceQuota sets the quota of its namespace across the fleet: Overall bounds
// what the scheduler places in the namespace (replicas times their resource requests,
// summed over the namespace's bindings), and each of StaticAssignments becomes a
// ResourceQuota of the same name in that member's namespace.
type FederatedResourceQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the quota.
	// +required
	Spec FederatedResourceQuotaSpec `json:"spec"`

	// Status is what the members report.
	// +optional
	Status FederatedResourceQuotaStatus `json:"status,omitempty"`
}

// FederatedResourceQuotaSpec is the spec of a FederatedResourceQuota.
// +kubebuilder:validation:XValidation:rule="!has(self.staticAssignments) || self.staticAssignments.all(a, self.staticAssignments.exists_one(b, b.clusterName == a.clusterName))",message="staticAssignments: each clusterName may appear only once; merge the duplicate entries",fieldPath=".staticAssignments"
type FederatedResourceQuotaSpec struct {
	// Overall is the hard limit of each named resource for the whole namespace, across
	// every member.
	// +required
	Overall corev1.ResourceList `json:"overall"`

	// StaticAssignments are the hard limits of some members: each becomes a ResourceQuota
	// in the member's namespace. Members not listed get no ResourceQuota.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	StaticAssignments []StaticClusterAssignment `json:"staticAssignments,omitempty"`
}

// StaticClusterAssignment is the hard limit of one member.
type StaticClusterAssignment struct {
	// ClusterName is the member's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=48
	ClusterName string `json:"clusterName"`

	// Hard is the member's hard limit of each named resource: the spec.hard of its
	// ResourceQuota.
	// +required
	Hard corev1.ResourceList `json:"hard"`
}

// FederatedResourceQuotaStatus is the status of a FederatedResourceQuota.
type FederatedResourceQuotaStatus struct {
	// Overall is the enforced hard limit (spec.overall, as last acted on).
	// +optional
	Overall corev1.ResourceList `json:"overall,omitempty"`

	// OverallUsed is the members' usage summed: the sum of aggregatedStatus' used.
	// +optional
	OverallUsed corev1.ResourceList `json:"overallUsed,omitempty"`

	// AggregatedStatus is the status of each member's ResourceQuota.
	// +optional
	// +listType=map
	// +listMapKey=clusterName
	AggregatedStatus []ClusterQuotaStatus `json:"aggregatedStatus,omitempty"`

	// Conditions: Ready (Flotilla's; Karmada has none), True once every assigned member's
	// ResourceQuota is applied and reports its status.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes (Flotilla's).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ClusterQuotaStatus is the status of the ResourceQuota in one member.
type ClusterQuotaStatus struct {
	// ClusterName is the member's name.
	// +required
	ClusterName string `json:"clusterName"`

	// ResourceQuotaStatus is the member ResourceQuota's status: hard and used.
	corev1.ResourceQuotaStatus `json:",inline"`
}

// The Ready condition of a FederatedResourceQuota, its reasons, and the events the
// FederatedResourceQuota controller records.
const (
	// FederatedResourceQuotaConditionReady: every assigned member's ResourceQuota is applied
	// and reports its status.
	FederatedResourceQuotaConditionReady = "Ready"
	// ReasonQuotaApplied (Ready True): every assigned member reports its ResourceQuota.
	ReasonQuotaApplied = "QuotaApplied"
	// ReasonQuotaPending (Ready False): some member has not applied or reported its
	// ResourceQuota yet.
	ReasonQuotaPending = "QuotaPending"
	// ReasonQuotaApplyFailed (Ready False): a member's ResourceQuota could not be written or
	// applied (the cluster is not joined, or the member refused it).
	ReasonQuotaApplyFailed = "QuotaApplyFailed"
	// EventReasonQuotaSynced: a member's ResourceQuota Work was written or removed
	// (Karmada's reason for the same).
	EventReasonQuotaSynced = "SyncWorkSucceed"
	// EventReasonQuotaSyncFailed: a member's ResourceQuota could not be written or applied
	// (Karmada's reason for the same).
	EventReasonQuotaSyncFailed = "SyncWorkFailed"
	// EventReasonQuotaStatusCollected: every assigned member reports its ResourceQuota
	// (Ready became True; Karmada's reason for a status collected).
	EventReasonQuotaStatusCollected = "AggregateStatusSucceed"
)

// +kubebuilder:object:root=true

// FederatedResourceQuotaList is a list of FederatedResourceQuotas.
type FederatedResourceQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedResourceQuota `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FederatedResourceQuota{}, &FederatedResourceQuotaList{})
}
