package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wr,categories={karmada-io}
// +kubebuilder:printcolumn:name="Finished",type=date,JSONPath=`.status.finishTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WorkloadRebalancer asks, once, for the named workloads to be rescheduled from scratch: their
// bindings' current placement is ignored and the scheduler places their replicas as it would
// place a new workload. Each workload is triggered once, when it first appears in
// spec.workloads; its result is reported in status.observedWorkloads.
type WorkloadRebalancer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the workloads to reschedule.
	// +required
	Spec WorkloadRebalancerSpec `json:"spec"`

	// Status reports what was done for each workload.
	// +optional
	Status WorkloadRebalancerStatus `json:"status,omitempty"`
}

// WorkloadRebalancerSpec names the workloads to reschedule.
type WorkloadRebalancerSpec struct {
	// Workloads are the resource templates whose bindings are rescheduled.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	Workloads []Workload `json:"workloads"`

	// TTLSecondsAfterFinished is how long a finished rebalancer (every workload Successful or
	// Failed) is kept before it is deleted. Unset keeps it; 0 deletes it as soon as it finishes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// Workload names one resource template.
type Workload struct {
	// APIVersion of the template, "group/version" or "v1".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="self.split('/').size() <= 2",message="apiVersion must be 'version' or 'group/version'"
	APIVersion string `json:"apiVersion"`

	// Kind of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Name of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the template; empty for a cluster-scoped template.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// WorkloadRebalancerStatus reports what was done for each workload.
type WorkloadRebalancerStatus struct {
	// ObservedWorkloads are the workloads handled so far, with their result.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	ObservedWorkloads []ObservedWorkload `json:"observedWorkloads,omitempty"`

	// ObservedGeneration is the generation of the spec the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// FinishTime is when every workload of the spec had a result.
	// +optional
	FinishTime *metav1.Time `json:"finishTime,omitempty"`
}

// ObservedWorkload is the result for one workload.
type ObservedWorkload struct {
	// Workload is the workload.
	// +required
	Workload Workload `json:"workload"`

	// Result is Successful when its binding's reschedule was triggered, Failed when it cannot
	// be.
	// +optional
	Result RebalanceResult `json:"result,omitempty"`

	// Reason says why the result is Failed.
	// +optional
	Reason RebalanceFailedReason `json:"reason,omitempty"`
}

// RebalanceResult is the result for one workload.
// +kubebuilder:validation:Enum=Successful;Failed
type RebalanceResult string

const (
	// RebalanceSuccessful means the workload's binding was asked to reschedule.
	RebalanceSuccessful RebalanceResult = "Successful"
	// RebalanceFailed means the workload's binding cannot be rescheduled.
	RebalanceFailed RebalanceResult = "Failed"
)

// RebalanceFailedReason says why a workload Failed.
// +kubebuilder:validation:MaxLength=128
type RebalanceFailedReason string

const (
	// RebalanceReferencedBindingNotFound means the workload has no binding (it does not
	// exist, or no policy propagates it).
	RebalanceReferencedBindingNotFound RebalanceFailedReason = "ReferencedBindingNotFound"
)

// +kubebuilder:object:root=true

// WorkloadRebalancerList is a list of WorkloadRebalancers.
type WorkloadRebalancerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the WorkloadRebalancers.
	Items []WorkloadRebalancer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkloadRebalancer{}, &WorkloadRebalancerList{})
}

// Reasons of the Events recorded on a WorkloadRebalancer.
const (
	// EventReasonRescheduleTriggered: a workload's binding was asked to reschedule.
	EventReasonRescheduleTriggered = "RescheduleTriggered"
	// EventReasonRescheduleFailed: a workload's binding cannot be asked to reschedule.
	EventReasonRescheduleFailed = "RescheduleFailed"
	// EventReasonRebalanceFinished: every workload has a result.
	EventReasonRebalanceFinished = "RebalanceFinished"
)
