package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={karmada-io}
// +kubebuilder:printcolumn:name="FIRST-TAINT",type=string,JSONPath=`.spec.taints[0].key`,description="The key of the first taint in spec.taints"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterTaintPolicy adds taints to the Clusters it targets when their conditions match
// AddOnConditions, and removes them when their conditions match RemoveOnConditions.
// AddOnConditions are evaluated first. Deleting the policy, or a Cluster leaving
// TargetClusters, never removes taints the policy added.
type ClusterTaintPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which clusters, on which conditions, get or lose which taints.
	// +required
	Spec ClusterTaintPolicySpec `json:"spec"`
}

// ClusterTaintPolicySpec is the spec of a ClusterTaintPolicy.
// +kubebuilder:validation:XValidation:rule="has(self.taints) && size(self.taints) > 0",message="taints: list at least one taint (key and effect) for the policy to add or remove",fieldPath=".taints"
// +kubebuilder:validation:XValidation:rule="!has(self.taints) || self.taints.all(t, self.taints.exists_one(u, u.key == t.key && u.effect == t.effect))",message="taints: each key and effect pair may appear only once; merge the duplicate entries",fieldPath=".taints"
type ClusterTaintPolicySpec struct {
	// TargetClusters selects the clusters the policy manages; unset selects every cluster.
	// A cluster that stops matching keeps its taints.
	// +optional
	TargetClusters *ClusterAffinity `json:"targetClusters,omitempty"`

	// AddOnConditions are ANDed: when a target cluster's conditions match all of them, the
	// taints are added. Empty: the policy never adds taints.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	AddOnConditions []MatchCondition `json:"addOnConditions,omitempty"`

	// RemoveOnConditions are ANDed: when a target cluster's conditions match all of them,
	// the taints are removed. They are evaluated after AddOnConditions. Empty: the policy
	// never removes taints.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	RemoveOnConditions []MatchCondition `json:"removeOnConditions,omitempty"`

	// Taints are added or removed; a taint is identified by its key and effect.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Taints []Taint `json:"taints"`
}

// MatchConditionOperator relates a condition's status to StatusValues.
// +kubebuilder:validation:Enum=In;NotIn
type MatchConditionOperator string

// The MatchCondition operators.
const (
	// MatchConditionOpIn matches when the condition's status is one of StatusValues.
	MatchConditionOpIn MatchConditionOperator = "In"
	// MatchConditionOpNotIn matches when the condition's status is none of StatusValues.
	MatchConditionOpNotIn MatchConditionOperator = "NotIn"
)

// MatchCondition matches one condition of a Cluster's status by its status. A condition the
// Cluster does not report matches neither In nor NotIn: the policy waits until it is
// reported.
// +kubebuilder:validation:XValidation:rule="size(self.statusValues) > 0",message="statusValues: list at least one of True, False, Unknown",fieldPath=".statusValues"
type MatchCondition struct {
	// ConditionType is the type of the condition, for example Ready.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	ConditionType string `json:"conditionType"`

	// Operator is In or NotIn.
	// +required
	Operator MatchConditionOperator `json:"operator"`

	// StatusValues are the statuses (True, False, Unknown) the operator compares with.
	// +required
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:Enum=True;False;Unknown
	StatusValues []metav1.ConditionStatus `json:"statusValues"`
}

// Taint is one taint a ClusterTaintPolicy adds to or removes from a Cluster.
type Taint struct {
	// Key is the taint key, a qualified name such as example.com/failed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="key must be a qualified name such as failed or example.com/failed: up to 63 letters, digits, '-', '_' or '.' (starting and ending with a letter or digit), after an optional DNS subdomain and '/'"
	Key string `json:"key"`

	// Effect is NoSchedule, PreferNoSchedule or NoExecute.
	// +required
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect"`

	// Value is the taint value.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value,omitempty"`
}

// Reasons of the events the ClusterTaintPolicy controller records on Clusters and policies.
const (
	// EventReasonClusterTaintAdded: a policy added a taint to a Cluster.
	EventReasonClusterTaintAdded = "ClusterTaintAdded"
	// EventReasonClusterTaintRemoved: a policy removed a taint from a Cluster.
	EventReasonClusterTaintRemoved = "ClusterTaintRemoved"
	// EventReasonInvalidTargetClusters: a policy's targetClusters cannot be evaluated (an
	// invalid label selector); the policy is skipped until it is fixed.
	EventReasonInvalidTargetClusters = "InvalidTargetClusters"
)

// +kubebuilder:object:root=true

// ClusterTaintPolicyList is a list of ClusterTaintPolicies.
type ClusterTaintPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTaintPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterTaintPolicy{}, &ClusterTaintPolicyList{})
}
