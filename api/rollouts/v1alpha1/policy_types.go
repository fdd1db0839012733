package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=rop,categories={flotilla-io}
// +kubebuilder:printcolumn:name="Stages",type=integer,JSONPath=`.spec.stages.size()`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// RolloutPolicy rolls new revisions of the templates it selects (in its own namespace) out
// stage by stage: docs/guides/progressive-rollouts.md.
type RolloutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RolloutPolicySpec `json:"spec"`
}

// +kubebuilder:object:root=true

// RolloutPolicyList is a list of RolloutPolicy.
type RolloutPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutPolicy `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=crop,categories={flotilla-io}
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterRolloutPolicy is a RolloutPolicy for templates of any namespace.
type ClusterRolloutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RolloutPolicySpec `json:"spec"`
}

// +kubebuilder:object:root=true

// ClusterRolloutPolicyList is a list of ClusterRolloutPolicy.
type ClusterRolloutPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterRolloutPolicy `json:"items"`
}

// RolloutPolicySpec selects templates and says how their new revisions reach the fleet.
// +kubebuilder:validation:XValidation:rule="self.stages.all(s, self.stages.exists_one(t, t.name == s.name))",message="stages: names must be unique"
type RolloutPolicySpec struct {
	// ResourceSelectors select the templates, as an OverridePolicy's do. Only namespaced
	// templates (ResourceBindings) are rolled out progressively.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	ResourceSelectors []policyv1alpha1.ResourceSelector `json:"resourceSelectors"`

	// Priority decides between policies selecting one template: the highest wins; at equal
	// priority a RolloutPolicy wins over a ClusterRolloutPolicy, then the more precise
	// selector (name over labels over kind), then the first name in alphabetical order. The
	// Rollout's PolicyConflict condition names the policies that lost.
	// +optional
	// +kubebuilder:default=0
	Priority *int32 `json:"priority,omitempty"`

	// Stages are taken in order: a stage opens once the one before it is complete.
	// Clusters of the placement that no stage picks join the last stage.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Stages []Stage `json:"stages"`

	// OnFailure is what a failed health gate does: Hold keeps every cluster where it is (the
	// failed cluster on the new revision, the clusters not started on the previous one);
	// Rollback moves the started clusters back to the last good revision.
	// +optional
	// +kubebuilder:default=Hold
	OnFailure FailureAction `json:"onFailure,omitempty"`

	// MaxUnavailable bounds the unavailable replicas of the template across all members
	// while a revision rolls out (a count, or a percent of the template's replicas, rounded
	// down, at least 1). Flotilla starts a member's rolling update only while the budget has
	// room, and gives that member's workload (spec.strategy.rollingUpdate.maxUnavailable of
	// a Deployment) the room left.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^([1-9][0-9]?|100)%$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 1",message="maxUnavailable: a count of at least 1 or a percent from 1% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// FailureAction is what a failed health gate does.
// +kubebuilder:validation:Enum=Hold;Rollback
type FailureAction string

const (
	// FailureHold keeps every cluster on the revision it has.
	FailureHold FailureAction = "Hold"
	// FailureRollback moves the started clusters back to the last good revision.
	FailureRollback FailureAction = "Rollback"
)

// Stage is a step of a rollout: a set of clusters, how many take the revision at once, and
// the gates between it and the next stage.
// +kubebuilder:validation:XValidation:rule="!has(self.soak) || !has(self.healthGate) || !has(self.healthGate.progressDeadline) || duration(self.healthGate.progressDeadline) >= duration(self.soak)",message="healthGate.progressDeadline must not be shorter than soak: the deadline covers a cluster's soak"
type Stage struct {
	// Name of the stage, unique in the policy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Clusters picks the stage's clusters among the placement's, not counting those an
	// earlier stage picked. Unset: every cluster left.
	// +optional
	Clusters *StageClusters `json:"clusters,omitempty"`

	// MaxConcurrency is how many of the stage's clusters take the revision at once (a count
	// or a percent of the stage's clusters, rounded up). Unset: all of them.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^([1-9][0-9]?|100)%$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 1",message="maxConcurrency: a count of at least 1 or a percent from 1% to 100%"
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`

	// HealthGate says how long a cluster has to be healthy.
	// +optional
	HealthGate *HealthGate `json:"healthGate,omitempty"`

	// Soak is how long each of the stage's clusters must stay healthy on the new revision
	// before it counts as done. Unset: done once healthy.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:MaxLength=32
	Soak *metav1.Duration `json:"soak,omitempty"`

	// Approval holds the stage for `kubectl flotilla rollout approve` before it opens
	// (Before), before the next stage may open (After), or both.
	// +optional
	// +kubebuilder:validation:Enum=Before;After;BeforeAndAfter
	Approval ApprovalGate `json:"approval,omitempty"`
}

// StageClusters picks clusters in one way.
// +kubebuilder:validation:XValidation:rule="(has(self.names) ? 1 : 0) + (has(self.labelSelector) ? 1 : 0) + (has(self.percent) ? 1 : 0) == 1",message="clusters: set exactly one of names, labelSelector, percent"
type StageClusters struct {
	// Names of clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	Names []string `json:"names,omitempty"`

	// LabelSelector picks clusters by their labels.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// Percent of the placement's clusters, rounded up, taken in name order from those left.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Percent *int32 `json:"percent,omitempty"`
}

// HealthGate bounds the time a cluster has to get healthy.
type HealthGate struct {
	// ProgressDeadline is how long a cluster has, from taking the revision, to have its
	// member objects healthy by the interpreter (a Deployment's rollout complete) and to
	// have soaked. Past it the rollout fails (see onFailure).
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:MaxLength=32
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
}

// ApprovalGate says where a stage waits for an approval.
type ApprovalGate string

const (
	// ApprovalBefore waits before the stage opens.
	ApprovalBefore ApprovalGate = "Before"
	// ApprovalAfter waits after the stage is done, before the next opens.
	ApprovalAfter ApprovalGate = "After"
	// ApprovalBeforeAndAfter waits at both.
	ApprovalBeforeAndAfter ApprovalGate = "BeforeAndAfter"
)

// NeedsBefore reports whether the gate waits before the stage opens.
func (g ApprovalGate) NeedsBefore() bool { return g == ApprovalBefore || g == ApprovalBeforeAndAfter }

// NeedsAfter reports whether the gate waits after the stage is done.
func (g ApprovalGate) NeedsAfter() bool { return g == ApprovalAfter || g == ApprovalBeforeAndAfter }

func init() {
	SchemeBuilder.Register(&RolloutPolicy{}, &RolloutPolicyList{}, &ClusterRolloutPolicy{}, &ClusterRolloutPolicyList{})
}
