package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ro,categories={flotilla-io}
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.status.resource.kind`
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.status.resource.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Stable",type=string,JSONPath=`.status.stableRevision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Rollout is the rollout state of one template, made by Flotilla for each ResourceBinding a
// rollout policy selects (same namespace and name, owned by the binding). Its spec holds the
// operator's controls (`kubectl flotilla rollout pause|resume|approve|undo` write them);
// its status, the revisions, the stages and every cluster's revision. The template itself is
// never written.
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec RolloutSpec `json:"spec,omitempty"`

	// +optional
	Status RolloutStatus `json:"status,omitempty"`
}

// RolloutSpec are an operator's controls of one rollout.
type RolloutSpec struct {
	// Paused opens no further stage or cluster; clusters already started go on.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Approvals let approval gates pass, each for one revision.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Approvals []Approval `json:"approvals,omitempty"`

	// Undo names a revision to roll back: every cluster returns to the last good revision
	// and the named one is not rolled out again until the template changes.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Undo string `json:"undo,omitempty"`
}

// Approval lets one approval gate pass for one revision.
type Approval struct {
	// Stage is the stage's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Stage string `json:"stage"`
	// Gate is Before or After.
	// +required
	// +kubebuilder:validation:Enum=Before;After
	Gate ApprovalGate `json:"gate"`
	// Revision approved.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision"`
}

// Phase of a rollout.
type Phase string

const (
	// PhaseComplete: every cluster runs the stable revision, which is the template's.
	PhaseComplete Phase = "Complete"
	// PhaseProgressing: stages are opening.
	PhaseProgressing Phase = "Progressing"
	// PhaseWaitingForApproval: an approval gate holds the next step.
	PhaseWaitingForApproval Phase = "WaitingForApproval"
	// PhasePaused: spec.paused holds the next step.
	PhasePaused Phase = "Paused"
	// PhaseHalted: a health gate failed and the policy holds.
	PhaseHalted Phase = "Halted"
	// PhaseRolledBack: the revision was rolled back (undo or onFailure: Rollback).
	PhaseRolledBack Phase = "RolledBack"
)

// StagePhase is where a stage is.
type StagePhase string

const (
	StagePending            StagePhase = "Pending"
	StageWaitingForApproval StagePhase = "WaitingForApproval"
	StageProgressing        StagePhase = "Progressing"
	StageComplete           StagePhase = "Complete"
	StageFailed             StagePhase = "Failed"
	// StageEmpty is a stage that picked no cluster: reported, then passed.
	StageEmpty StagePhase = "Empty"
)

// ClusterPhase is where one cluster is in the rollout of the revision.
type ClusterPhase string

const (
	// ClusterWaiting: on the stable revision, its stage not open (or no room yet).
	ClusterWaiting ClusterPhase = "Waiting"
	// ClusterProgressing: took the revision, not healthy yet.
	ClusterProgressing ClusterPhase = "Progressing"
	// ClusterSoaking: healthy, soaking.
	ClusterSoaking ClusterPhase = "Soaking"
	// ClusterDone: healthy and soaked.
	ClusterDone ClusterPhase = "Done"
	// ClusterFailed: missed its progress deadline.
	ClusterFailed ClusterPhase = "Failed"
)

// RolloutStatus is the state of one template's rollout.
type RolloutStatus struct {
	// ObservedGeneration is the Rollout generation (its spec) last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Resource is the template.
	// +optional
	Resource ResourceRef `json:"resource,omitempty"`

	// Policy is the policy in force: "RolloutPolicy/NAME" or "ClusterRolloutPolicy/NAME".
	// +optional
	// +kubebuilder:validation:MaxLength=300
	Policy string `json:"policy,omitempty"`

	// Phase sums the rollout up.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Revision is the template's current revision: a digest of the template without its
	// metadata, status and replicas.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision,omitempty"`

	// StableRevision is the last revision rolled out to every cluster: the one clusters keep
	// until their stage opens, and the one a rollback returns to.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	StableRevision string `json:"stableRevision,omitempty"`

	// StableTemplate is the stable revision's template without metadata and status: what
	// clusters not on the new revision are rendered from (with the template's current
	// metadata and replicas).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	StableTemplate *runtime.RawExtension `json:"stableTemplate,omitempty"`

	// RolledBack is the revision last rolled back: it does not roll out again until the
	// template changes.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RolledBack string `json:"rolledBack,omitempty"`

	// Halt says which cluster failed, why and when; set while the rollout is Halted.
	// +optional
	Halt *Halt `json:"halt,omitempty"`

	// MaxUnavailable is the fleet-wide budget of unavailable replicas, resolved, and
	// Unavailable the unavailable replicas the members last reported, summed.
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
	// +optional
	Unavailable int32 `json:"unavailable,omitempty"`

	// Stages of the revision rolling out.
	// +optional
	// +kubebuilder:validation:MaxItems=17
	// +listType=atomic
	Stages []StageStatus `json:"stages,omitempty"`

	// Clusters are the placement's clusters: the revision each runs, the one it may run,
	// and its stage.
	// +optional
	// +listType=atomic
	Clusters []ClusterStatus `json:"clusters,omitempty"`

	// Conditions: Progressing, Halted, PolicyConflict.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceRef names a template.
type ResourceRef struct {
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
}

// Halt is a failed health gate.
type Halt struct {
	Revision string      `json:"revision"`
	Stage    string      `json:"stage"`
	Cluster  string      `json:"cluster"`
	Reason   string      `json:"reason"`
	At       metav1.Time `json:"at"`
}

// StageStatus is one stage of the revision rolling out.
type StageStatus struct {
	Name string `json:"name"`
	// +optional
	Phase StagePhase `json:"phase,omitempty"`
	// +optional
	// +listType=atomic
	Clusters []string `json:"clusters,omitempty"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterStatus is one cluster of the placement.
type ClusterStatus struct {
	Name string `json:"name"`
	// Stage that picked it.
	// +optional
	Stage string `json:"stage,omitempty"`
	// Revision its Work carries.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Target is the revision it may run: the binding controller renders its Work from it.
	// +optional
	Target string `json:"target,omitempty"`
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`
	// Health of its member objects, as its Work reports it.
	// +optional
	Health string `json:"health,omitempty"`
	// Unavailable replicas it reports.
	// +optional
	Unavailable int32 `json:"unavailable,omitempty"`
	// MaxUnavailable is the share of the fleet budget it was given for its rolling update.
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
	// StartedAt is when it took the target revision.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// HealthySince is when it was last seen becoming healthy on the target revision.
	// +optional
	HealthySince *metav1.Time `json:"healthySince,omitempty"`
	// ObservedGenerationBefore is the highest status.observedGeneration its member objects
	// reported before it took the revision: health counts only once they report a later one.
	// +optional
	ObservedGenerationBefore int64 `json:"observedGenerationBefore,omitempty"`
}

// +kubebuilder:object:root=true

// RolloutList is a list of Rollout.
type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

// Condition types and reasons of a Rollout.
const (
	ConditionProgressing    = "Progressing"
	ConditionHalted         = "Halted"
	ConditionPolicyConflict = "PolicyConflict"

	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonRolloutComplete          = "RolloutComplete"
	ReasonStagesOpening            = "StagesOpening"
	ReasonWaitingForApproval       = "WaitingForApproval"
	ReasonPaused                   = "Paused"
	ReasonRolledBack               = "RolledBack"
	ReasonNotHalted                = "NotHalted"
	ReasonOverlappingPolicies      = "OverlappingPolicies"
	ReasonSinglePolicy             = "SinglePolicy"
)

// Event reasons.
const (
	EventStageStarted    = "RolloutStageStarted"
	EventStageCompleted  = "RolloutStageCompleted"
	EventStageEmpty      = "RolloutStageEmpty"
	EventHalted          = "RolloutHalted"
	EventRolledBack      = "RolloutRolledBack"
	EventComplete        = "RolloutComplete"
	EventSuperseded      = "RolloutSuperseded"
	EventWaitingApproval = "RolloutWaitingForApproval"
)

// RevisionLabel is the label on a Work (and its member object's annotations carry none):
// the revision of the template the Work carries.
const RevisionLabel = "rollouts.flotilla.io/revision"

func init() {
	SchemeBuilder.Register(&Rollout{}, &RolloutList{})
}
