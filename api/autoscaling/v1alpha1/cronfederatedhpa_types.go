package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=cronfederatedhpas,scope=Namespaced,shortName=cronfhpa,categories={karmada-io}
// +kubebuilder:printcolumn:JSONPath=`.spec.scaleTargetRef.kind`,name=`REFERENCE-KIND`,type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.scaleTargetRef.name`,name=`REFERENCE-NAME`,type=string
// +kubebuilder:printcolumn:JSONPath=`.status.fleetReplicas`,name=`FLEET-REPLICAS`,type=integer,priority=1
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Ready")].status`,name=`READY`,type=string,priority=1
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name=`AGE`,type=date

// CronFederatedHPA scales a template's fleet replicas on cron schedules. Flotilla never writes
// the template: a rule that fires sets the replicas of the template's ResourceBinding (the
// fleet's replica count the scheduler divides), while the template still asks for the
// replicas it asked for when the rule fired (docs/cron-federated-hpa.md).
type CronFederatedHPA struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the target and the rules.
	// +required
	Spec CronFederatedHPASpec `json:"spec"`

	// Status is the rules' execution history (Karmada's) and what applies now (Flotilla's).
	// +optional
	Status CronFederatedHPAStatus `json:"status,omitempty"`
}

// CronFederatedHPASpec is the target and the rules.
type CronFederatedHPASpec struct {
	// ScaleTargetRef is the template to scale (a Deployment, StatefulSet or any kind whose
	// replicas Flotilla knows, in the CronFederatedHPA's namespace), or a FederatedHPA, whose
	// bounds the rules' targetMinReplicas/targetMaxReplicas set: the FederatedHPA controller
	// reads them from this status, never writing the FederatedHPA's spec.
	// +required
	ScaleTargetRef autoscalingv2.CrossVersionObjectReference `json:"scaleTargetRef"`

	// Rules are the schedules and what each sets.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Rules []CronFederatedHPARule `json:"rules"`
}

// CronFederatedHPARule is a schedule and what it sets when it fires.
// +kubebuilder:validation:XValidation:rule="has(self.targetReplicas) || has(self.targetMinReplicas) || has(self.targetMaxReplicas)",message="a rule must set targetReplicas (a workload target) or targetMinReplicas/targetMaxReplicas (a FederatedHPA target)"
type CronFederatedHPARule struct {
	// Name of the rule, unique in the CronFederatedHPA: its execution history is kept under
	// it (a renamed rule starts a new history).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Name string `json:"name"`

	// Schedule is a cron expression of five fields (minute hour day-of-month month
	// day-of-week) as a CronJob's, or a descriptor (@hourly, @daily, @every 1h30m).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Schedule string `json:"schedule"`

	// TargetReplicas are the replicas to give a workload target.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TargetReplicas *int32 `json:"targetReplicas,omitempty"`

	// TargetMinReplicas is the minReplicas to give a FederatedHPA target.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetMinReplicas *int32 `json:"targetMinReplicas,omitempty"`

	// TargetMaxReplicas is the maxReplicas to give a FederatedHPA target.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetMaxReplicas *int32 `json:"targetMaxReplicas,omitempty"`

	// Suspend stops the rule from firing; false by default.
	// +kubebuilder:default=false
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// TimeZone of the schedule, a name of the tz database (Asia/Shanghai); UTC when not set
	// (Karmada: the controller-manager's time zone, which in a container is UTC too).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone *string `json:"timeZone,omitempty"`

	// SuccessfulHistoryLimit is how many successful executions the rule's history keeps.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	// +optional
	SuccessfulHistoryLimit *int32 `json:"successfulHistoryLimit,omitempty"`

	// FailedHistoryLimit is how many failed executions the rule's history keeps.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=32
	// +optional
	FailedHistoryLimit *int32 `json:"failedHistoryLimit,omitempty"`
}

// CronFederatedHPAStatus is the rules' execution history and what applies now.
type CronFederatedHPAStatus struct {
	// ExecutionHistories are each rule's next execution and latest executions (Karmada's).
	// +optional
	// +listType=map
	// +listMapKey=ruleName
	ExecutionHistories []ExecutionHistory `json:"executionHistories,omitempty"`

	// FleetReplicas are the replicas the latest successful execution gave the target's
	// binding (Flotilla's field). They apply while the template still asks for
	// TemplateReplicas; when the template's replicas are edited, the edit wins until the
	// next execution.
	// +optional
	FleetReplicas *int32 `json:"fleetReplicas,omitempty"`

	// TemplateReplicas are the template's replicas when that execution happened.
	// +optional
	TemplateReplicas *int32 `json:"templateReplicas,omitempty"`

	// LastScaleTime is when that execution happened.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`

	// LastRule is the rule of that execution.
	// +optional
	LastRule string `json:"lastRule,omitempty"`

	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready is False when the target or a rule cannot be acted on (reason
	// TargetNotSupported, InvalidSchedule), naming the field.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ExecutionHistory is one rule's execution history.
type ExecutionHistory struct {
	// RuleName is the rule's name.
	// +required
	RuleName string `json:"ruleName"`

	// NextExecutionTime is when the rule fires next; nil while it is suspended.
	// +optional
	NextExecutionTime *metav1.Time `json:"nextExecutionTime,omitempty"`

	// SuccessfulExecutions are the latest successful executions, newest first (as Karmada keeps them).
	// +optional
	// +listType=atomic
	SuccessfulExecutions []SuccessfulExecution `json:"successfulExecutions,omitempty"`

	// FailedExecutions are the latest failed executions, newest first.
	// +optional
	// +listType=atomic
	FailedExecutions []FailedExecution `json:"failedExecutions,omitempty"`
}

// SuccessfulExecution is a successful execution.
type SuccessfulExecution struct {
	// ScheduleTime is when the schedule said to fire.
	// +required
	ScheduleTime *metav1.Time `json:"scheduleTime"`
	// ExecutionTime is when it did.
	// +required
	ExecutionTime *metav1.Time `json:"executionTime"`
	// AppliedReplicas are the replicas set (targetReplicas).
	// +optional
	AppliedReplicas *int32 `json:"appliedReplicas,omitempty"`
	// AppliedMaxReplicas is the maxReplicas set (targetMaxReplicas).
	// +optional
	AppliedMaxReplicas *int32 `json:"appliedMaxReplicas,omitempty"`
	// AppliedMinReplicas is the minReplicas set (targetMinReplicas).
	// +optional
	AppliedMinReplicas *int32 `json:"appliedMinReplicas,omitempty"`
}

// FailedExecution is a failed execution.
type FailedExecution struct {
	// ScheduleTime is when the schedule said to fire.
	// +required
	ScheduleTime *metav1.Time `json:"scheduleTime"`
	// ExecutionTime is when it was tried.
	// +required
	ExecutionTime *metav1.Time `json:"executionTime"`
	// Message says why it failed.
	// +required
	Message string `json:"message"`
}

// ConditionReady is a CronFederatedHPA's Ready condition.
const ConditionReady = "Ready"

// +kubebuilder:object:root=true

// CronFederatedHPAList is a list of CronFederatedHPAs.
type CronFederatedHPAList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CronFederatedHPA `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CronFederatedHPA{}, &CronFederatedHPAList{})
}
