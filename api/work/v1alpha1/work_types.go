package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=wk,categories={karmada-io}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="WORKLOAD-KIND",type=string,JSONPath=`.spec.workload.manifests[*].kind`
// +kubebuilder:printcolumn:name="APPLIED",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// Work holds the manifests to apply in one member cluster. It lives in the member's execution
// namespace, karmada-es-<cluster>.
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the manifests.
	// +required
	Spec WorkSpec `json:"spec"`

	// Status is what the execution and work-status controllers observed in the member.
	// +optional
	Status WorkStatus `json:"status,omitempty"`
}

// WorkSpec holds the manifests of a Work.
type WorkSpec struct {
	// Workload holds the manifests.
	// +optional
	Workload WorkloadTemplate `json:"workload,omitempty"`

	// SuspendDispatching holds the manifests back from the member.
	// +optional
	SuspendDispatching *bool `json:"suspendDispatching,omitempty"`

	// PreserveResourcesOnDeletion keeps the member objects when the Work is deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`
}

// WorkloadTemplate holds the manifests.
type WorkloadTemplate struct {
	// Manifests are whole Kubernetes objects.
	// +optional
	Manifests []Manifest `json:"manifests,omitempty"`
}

// Manifest is one whole Kubernetes object. The schema keeps it as is (as Karmada does); the
// execution controller reports a manifest that is not a whole object on the Work.
// +kubebuilder:pruning:PreserveUnknownFields
type Manifest struct {
	runtime.RawExtension `json:",inline"`
}

// WorkStatus is what was observed in the member.
type WorkStatus struct {
	// Conditions: Applied (and Available).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ManifestStatuses hold the reflected status and health of each manifest.
	// +optional
	ManifestStatuses []ManifestStatus `json:"manifestStatuses,omitempty"`
}

// ResourceHealth is the health of a member object.
// +kubebuilder:validation:Enum=Healthy;Unhealthy;Unknown
type ResourceHealth string

// Health values.
const (
	ResourceHealthy       ResourceHealth = "Healthy"
	ResourceUnhealthy     ResourceHealth = "Unhealthy"
	ResourceUnknownHealth ResourceHealth = "Unknown"
)

// ManifestStatus is the observed status of one manifest.
type ManifestStatus struct {
	// Identifier says which manifest.
	// +required
	Identifier ResourceIdentifier `json:"identifier"`

	// Status is the member object's status, reflected.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Health of the member object.
	// +optional
	Health ResourceHealth `json:"health,omitempty"`
}

// ResourceIdentifier identifies one manifest of a Work.
type ResourceIdentifier struct {
	// Ordinal is the manifest's index in spec.workload.manifests.
	// +required
	Ordinal int `json:"ordinal"`
	// Group of the object.
	// +optional
	Group string `json:"group,omitempty"`
	// Version of the object.
	// +required
	Version string `json:"version"`
	// Kind of the object.
	// +required
	Kind string `json:"kind"`
	// Resource is the plural resource name.
	// +required
	Resource string `json:"resource"`
	// Namespace of the object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	// +required
	Name string `json:"name"`
}

// +kubebuilder:object:root=true

// WorkList is a list of Works.
type WorkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Work `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Work{}, &WorkList{})
}
