package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels of KEP-5313.
const (
	// DecisionKeyLabel has the same value on every slice of one decision.
	DecisionKeyLabel = "multicluster.x-k8s.io/decision-key"
	// DecisionIndexLabel is the position of a slice in an ordered decision: 0, 1, ...
	DecisionIndexLabel = "multicluster.x-k8s.io/decision-index"
	// PlacementKeyLabel links a decision to the workload it places.
	PlacementKeyLabel = "multicluster.x-k8s.io/placement-key"
	// MaxDecisionsPerSlice is how many clusters one PlacementDecision lists at most.
	MaxDecisionsPerSlice = 100
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories={multicluster}
// +kubebuilder:printcolumn:name="SCHEDULER",type=string,JSONPath=`.schedulerName`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// PlacementDecision is one slice of a scheduler's decision: up to 100 of the clusters it
// chose. A decision of more clusters is several slices sharing the label
// multicluster.x-k8s.io/decision-key.
type PlacementDecision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Decisions are the clusters of this slice.
	// +required
	// +kubebuilder:validation:MinItems=0
	// +kubebuilder:validation:MaxItems=100
	Decisions []ClusterDecision `json:"decisions"`

	// SchedulerName is the scheduler that made the decision.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
}

// ClusterDecision is one chosen cluster.
type ClusterDecision struct {
	// ClusterProfileRef is the chosen cluster's ClusterProfile.
	// +required
	ClusterProfileRef ClusterProfileReference `json:"clusterProfileRef"`

	// Reason says why the cluster was chosen.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ClusterProfileReference names a ClusterProfile.
type ClusterProfileReference struct {
	// Name of the ClusterProfile.
	// +required
	Name string `json:"name"`

	// Namespace of the ClusterProfile; empty is the PlacementDecision's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// +kubebuilder:object:root=true

// PlacementDecisionList is a list of PlacementDecisions.
type PlacementDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacementDecision `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PlacementDecision{}, &PlacementDecisionList{})
}
