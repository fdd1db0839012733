package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=pp,categories={karmada-io}
// +kubebuilder:printcolumn:name="CONFLICT-RESOLUTION",type=string,JSONPath=`.spec.conflictResolution`
// +kubebuilder:printcolumn:name="PRIORITY",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// PropagationPolicy places the resource templates of its namespace on member clusters.
type PropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which templates to propagate and where.
	// +required
	Spec PropagationSpec `json:"spec"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cpp,categories={karmada-io}
// +kubebuilder:printcolumn:name="CONFLICT-RESOLUTION",type=string,JSONPath=`.spec.conflictResolution`
// +kubebuilder:printcolumn:name="PRIORITY",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterPropagationPolicy places resource templates of any opted-in namespace, and
// cluster-scoped templates, on member clusters.
type ClusterPropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which templates to propagate and where.
	// +required
	Spec PropagationSpec `json:"spec"`
}

// PropagationSpec is the spec of PropagationPolicy and ClusterPropagationPolicy.
// +kubebuilder:validation:XValidation:rule="!has(self.preemption) || self.preemption != 'Always' || self.resourceSelectors.all(s, has(s.name) && size(s.name) > 0)",message="preemption: Always takes templates from other policies, so every resourceSelector must name its template (set resourceSelectors[].name)",fieldPath=".preemption"
type PropagationSpec struct {
	// ResourceSelectors select the templates to propagate. A template is selected when it
	// matches any selector.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`

	// Association is deprecated; use PropagateDeps.
	// +optional
	Association bool `json:"association,omitempty"`

	// PropagateDeps propagates the resources a template refers to (ConfigMaps, Secrets, ...)
	// along with it.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// Placement says where the templates go.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Priority orders policies that select the same template: the higher wins.
	// +optional
	// +kubebuilder:default=0
	Priority *int32 `json:"priority,omitempty"`

	// Preemption lets this policy take templates claimed by a policy of lower priority.
	// +optional
	// +kubebuilder:default=Never
	Preemption PreemptionBehavior `json:"preemption,omitempty"`

	// DependentOverrides are OverridePolicies that must exist before the templates propagate.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	DependentOverrides []string `json:"dependentOverrides,omitempty"`

	// SchedulerName is the scheduler that places the templates.
	// +optional
	// +kubebuilder:default=default-scheduler
	// +kubebuilder:validation:MaxLength=253
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover says how to move the templates when clusters or applications fail.
	// +optional
	Failover *FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution says what to do when a member already has an object of the same name
	// that Flotilla does not manage: Abort (leave it) or Overwrite (take it over).
	// +optional
	// +kubebuilder:default=Abort
	ConflictResolution ConflictResolution `json:"conflictResolution,omitempty"`

	// ActivationPreference Lazy applies policy changes only when a template changes.
	// +optional
	ActivationPreference ActivationPreference `json:"activationPreference,omitempty"`

	// Suspension pauses dispatching of the templates.
	// +optional
	Suspension *Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion keeps member objects when their template is deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority orders the templates in the scheduling queue.
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`
}

// ResourceSelector selects templates by apiVersion and kind, and optionally by namespace,
// name or labels.
type ResourceSelector struct {
	// APIVersion of the templates, for example apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`
	// Kind of the templates, for example Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Namespace of the templates; for a PropagationPolicy it must be the policy's own.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// Name of the template. When set, LabelSelector is ignored.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// LabelSelector selects templates by label.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// FieldSelector selects clusters by the fields provider, region and zone.
// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.key in ['provider', 'region', 'zone'])",message="fieldSelector: matchExpressions[].key must be one of provider, region, zone"
// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn'])",message="fieldSelector: matchExpressions[].operator must be In or NotIn"
type FieldSelector struct {
	// MatchExpressions are ANDed.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// Placement says where templates go.
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterAffinity) && has(self.clusterAffinities))",message="clusterAffinity and clusterAffinities are mutually exclusive: use clusterAffinities for ordered fallback groups, clusterAffinity otherwise"
// +kubebuilder:validation:XValidation:rule="!has(self.spreadConstraints) || !self.spreadConstraints.exists(s, has(s.spreadByField) && s.spreadByField != 'cluster') || self.spreadConstraints.exists(s, has(s.spreadByField) && s.spreadByField == 'cluster')",message="spreadConstraints: spreading by region, zone or provider also needs a constraint with spreadByField: cluster",fieldPath=".spreadConstraints"
// +kubebuilder:validation:XValidation:rule="!has(self.clusterAffinities) || self.clusterAffinities.all(a, self.clusterAffinities.exists_one(b, b.affinityName == a.affinityName))",message="clusterAffinities: affinityName must be unique",fieldPath=".clusterAffinities"
// +kubebuilder:validation:XValidation:rule="!has(self.clusterAffinities) || !self.clusterAffinities.exists(a, has(a.overflowAffinities) && size(a.overflowAffinities) > 0) || (has(self.replicaScheduling) && (!has(self.replicaScheduling.replicaSchedulingType) || self.replicaScheduling.replicaSchedulingType == 'Divided') && ((has(self.replicaScheduling.replicaDivisionPreference) && self.replicaScheduling.replicaDivisionPreference == 'Aggregated') || (has(self.replicaScheduling.weightPreference) && has(self.replicaScheduling.weightPreference.dynamicWeight))))",message="clusterAffinities[].overflowAffinities: only with replicaScheduling Divided by weightPreference.dynamicWeight AvailableReplicas or by replicaDivisionPreference Aggregated (replicas overflow when a group's free capacity runs out)",fieldPath=".clusterAffinities"
type Placement struct {
	// ClusterAffinity selects the clusters the templates may go to.
	// +optional
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`

	// ClusterAffinities are ordered groups of clusters: the scheduler uses the first group
	// that fits and falls back to the next.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ClusterAffinities []ClusterAffinityTerm `json:"clusterAffinities,omitempty"`

	// ClusterTolerations tolerate cluster taints.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ClusterTolerations []corev1.Toleration `json:"clusterTolerations,omitempty"`

	// SpreadConstraints spread the templates over groups of clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`

	// ReplicaScheduling says how replicas are put on clusters. Unset means Duplicated.
	// +optional
	ReplicaScheduling *ReplicaSchedulingStrategy `json:"replicaScheduling,omitempty"`

	// WorkloadAffinity places workloads of the same group together or apart.
	// +optional
	WorkloadAffinity *WorkloadAffinity `json:"workloadAffinity,omitempty"`
}

// ClusterAffinity selects clusters. A cluster matches when it matches every set selector and
// is not excluded.
type ClusterAffinity struct {
	// LabelSelector selects clusters by label.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// FieldSelector selects clusters by provider, region and zone.
	// +optional
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`

	// ClusterNames lists clusters by name.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=48
	ClusterNames []string `json:"clusterNames,omitempty"`

	// Exclude lists clusters never to select.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=48
	Exclude []string `json:"exclude,omitempty"`
}

// ClusterAffinityTerm is one named group of clusters in an ordered list.
// +kubebuilder:validation:XValidation:rule="!has(self.overflowAffinities) || size(self.overflowAffinities) == 0 || has(self.clusterNames) || has(self.labelSelector) || has(self.fieldSelector) || has(self.exclude)",message="overflowAffinities: the group's own clusters (clusterNames, labelSelector, fieldSelector or exclude) are the preferred tier and must be set",fieldPath=".overflowAffinities"
// +kubebuilder:validation:XValidation:rule="!has(self.overflowAffinities) || self.overflowAffinities.all(o, o.affinityName != self.affinityName && self.overflowAffinities.exists_one(p, p.affinityName == o.affinityName))",message="overflowAffinities: affinityName must be unique and differ from the group's own",fieldPath=".overflowAffinities"
type ClusterAffinityTerm struct {
	// AffinityName names the group; it is recorded in the binding's status.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	AffinityName string `json:"affinityName"`

	ClusterAffinity `json:",inline"`

	// OverflowAffinities are groups that take the replicas this group cannot hold, in order:
	// the scheduler fills this group first, overflows to the next when its clusters' free
	// capacity runs out, and takes replicas back from the last one first. A cluster belongs to
	// the first group it matches. Only with Divided replicas by dynamicWeight or Aggregated.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	OverflowAffinities []OverflowAffinityTerm `json:"overflowAffinities,omitempty"`
}

// OverflowAffinityTerm is one named overflow group.
type OverflowAffinityTerm struct {
	// AffinityName names the group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	AffinityName string `json:"affinityName"`

	ClusterAffinity `json:",inline"`
}

// SpreadFieldValue is a cluster field templates can be spread by.
// +kubebuilder:validation:Enum=cluster;region;zone;provider
type SpreadFieldValue string

// Spread fields.
const (
	SpreadByFieldCluster  SpreadFieldValue = "cluster"
	SpreadByFieldRegion   SpreadFieldValue = "region"
	SpreadByFieldZone     SpreadFieldValue = "zone"
	SpreadByFieldProvider SpreadFieldValue = "provider"
)

// SpreadConstraint spreads templates over groups of clusters that share a field or label.
// +kubebuilder:validation:XValidation:rule="!(has(self.spreadByField) && has(self.spreadByLabel))",message="spreadByField and spreadByLabel are mutually exclusive: set one per constraint"
// +kubebuilder:validation:XValidation:rule="!has(self.maxGroups) || !has(self.minGroups) || self.maxGroups == 0 || self.maxGroups >= self.minGroups",message="maxGroups must not be less than minGroups"
type SpreadConstraint struct {
	// SpreadByField groups clusters by a field: cluster, region, zone or provider.
	// +optional
	SpreadByField SpreadFieldValue `json:"spreadByField,omitempty"`

	// SpreadByLabel groups clusters by the value of a label.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	SpreadByLabel string `json:"spreadByLabel,omitempty"`

	// MaxGroups is the most groups to use.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxGroups int `json:"maxGroups,omitempty"`

	// MinGroups is the fewest groups to use.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinGroups int `json:"minGroups,omitempty"`
}

// ReplicaSchedulingType says whether each cluster gets all replicas or a share.
// +kubebuilder:validation:Enum=Duplicated;Divided
type ReplicaSchedulingType string

// Replica scheduling types.
const (
	ReplicaSchedulingTypeDuplicated ReplicaSchedulingType = "Duplicated"
	ReplicaSchedulingTypeDivided    ReplicaSchedulingType = "Divided"
)

// ReplicaDivisionPreference says how Divided replicas are shared.
// +kubebuilder:validation:Enum=Aggregated;Weighted
type ReplicaDivisionPreference string

// Division preferences.
const (
	ReplicaDivisionPreferenceAggregated ReplicaDivisionPreference = "Aggregated"
	ReplicaDivisionPreferenceWeighted   ReplicaDivisionPreference = "Weighted"
)

// ReplicaSchedulingStrategy says how replicas are put on clusters.
type ReplicaSchedulingStrategy struct {
	// ReplicaSchedulingType is Duplicated (every cluster gets all replicas) or Divided.
	// +optional
	// +kubebuilder:default=Divided
	ReplicaSchedulingType ReplicaSchedulingType `json:"replicaSchedulingType,omitempty"`

	// ReplicaDivisionPreference is Aggregated (as few clusters as fit) or Weighted.
	// +optional
	ReplicaDivisionPreference ReplicaDivisionPreference `json:"replicaDivisionPreference,omitempty"`

	// WeightPreference gives the weights of Divided/Weighted.
	// +optional
	WeightPreference *ClusterPreferences `json:"weightPreference,omitempty"`
}

// DynamicWeightFactor is what a dynamic weight is computed from.
// +kubebuilder:validation:Enum=AvailableReplicas
type DynamicWeightFactor string

// DynamicWeightByAvailableReplicas weighs clusters by how many replicas they can still hold.
const DynamicWeightByAvailableReplicas DynamicWeightFactor = "AvailableReplicas"

// ClusterPreferences are the weights of Divided/Weighted.
type ClusterPreferences struct {
	// StaticWeightList gives fixed weights; a cluster's weight is that of the highest rule it
	// matches, and clusters matching no rule get no replicas.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	StaticWeightList []StaticClusterWeight `json:"staticWeightList,omitempty"`

	// DynamicWeight weighs clusters by a measured factor.
	// +optional
	DynamicWeight DynamicWeightFactor `json:"dynamicWeight,omitempty"`
}

// StaticClusterWeight is the weight of the clusters matched by TargetCluster.
type StaticClusterWeight struct {
	// TargetCluster selects the clusters.
	// +required
	TargetCluster ClusterAffinity `json:"targetCluster"`

	// Weight of the selected clusters.
	// +required
	// +kubebuilder:validation:Minimum=1
	Weight int64 `json:"weight"`
}

// WorkloadAffinity places workloads of the same group together or apart.
type WorkloadAffinity struct {
	// Affinity places workloads with the same label value together.
	// +optional
	Affinity *WorkloadAffinityTerm `json:"affinity,omitempty"`
	// AntiAffinity places workloads with the same label value apart.
	// +optional
	AntiAffinity *WorkloadAffinityTerm `json:"antiAffinity,omitempty"`
}

// WorkloadAffinityTerm groups workloads by a label key.
type WorkloadAffinityTerm struct {
	// GroupByLabelKey is the label whose value forms the group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	GroupByLabelKey string `json:"groupByLabelKey"`
}

// PreemptionBehavior says whether a policy may take templates claimed by another.
// +kubebuilder:validation:Enum=Always;Never
type PreemptionBehavior string

// Preemption behaviours.
const (
	PreemptAlways PreemptionBehavior = "Always"
	PreemptNever  PreemptionBehavior = "Never"
)

// ConflictResolution says what to do with unmanaged member objects of the same name.
// +kubebuilder:validation:Enum=Abort;Overwrite
type ConflictResolution string

// Conflict resolutions.
const (
	ConflictAbort     ConflictResolution = "Abort"
	ConflictOverwrite ConflictResolution = "Overwrite"
)

// ActivationPreference says when policy changes reach templates.
// +kubebuilder:validation:Enum=Lazy
type ActivationPreference string

// LazyActivation applies policy changes only when a template changes.
const LazyActivation ActivationPreference = "Lazy"

// Suspension pauses dispatching of Works.
// +kubebuilder:validation:XValidation:rule="!(has(self.dispatching) && self.dispatching && has(self.dispatchingOnClusters))",message="suspension: dispatching: true suspends every cluster and cannot be combined with dispatchingOnClusters"
type Suspension struct {
	// Dispatching suspends dispatching to every cluster.
	// +optional
	Dispatching *bool `json:"dispatching,omitempty"`

	// DispatchingOnClusters suspends dispatching to the named clusters.
	// +optional
	DispatchingOnClusters *SuspendClusters `json:"dispatchingOnClusters,omitempty"`
}

// SuspendClusters names clusters.
type SuspendClusters struct {
	// ClusterNames of the suspended clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=48
	ClusterNames []string `json:"clusterNames,omitempty"`
}

// PriorityClassSource is where a schedule priority comes from.
// +kubebuilder:validation:Enum=KubePriorityClass
type PriorityClassSource string

// KubePriorityClass: a Kubernetes PriorityClass.
const KubePriorityClass PriorityClassSource = "KubePriorityClass"

// SchedulePriority orders templates in the scheduling queue.
type SchedulePriority struct {
	// PriorityClassSource is where the priority class is looked up.
	// +required
	PriorityClassSource PriorityClassSource `json:"priorityClassSource"`
	// PriorityClassName names the priority class.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName"`
}

// FailoverBehavior says how templates move when clusters or applications fail.
type FailoverBehavior struct {
	// Application failover moves an unhealthy application.
	// +optional
	Application *ApplicationFailoverBehavior `json:"application,omitempty"`
	// Cluster failover moves applications off a failed cluster.
	// +optional
	Cluster *ClusterFailoverBehavior `json:"cluster,omitempty"`
}

// PurgeMode says how an application is removed from the cluster it leaves.
type PurgeMode string

// Purge modes.
const (
	PurgeModeDirectly   PurgeMode = "Directly"
	PurgeModeGracefully PurgeMode = "Gracefully"
	PurgeModeNever      PurgeMode = "Never"
)

// ApplicationFailoverBehavior says when and how an unhealthy application moves.
type ApplicationFailoverBehavior struct {
	// DecisionConditions say when the application is considered failed.
	// +required
	DecisionConditions DecisionConditions `json:"decisionConditions"`

	// PurgeMode says how the application is removed from the old cluster.
	// +optional
	// +kubebuilder:validation:Enum=Directly;Gracefully;Never
	// +kubebuilder:default=Gracefully
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// GracePeriodSeconds is the most time to wait for the new cluster before purging.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// StatePreservation carries state to the new cluster.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// DecisionConditions say when an application is considered failed.
type DecisionConditions struct {
	// TolerationSeconds is how long an application may be unhealthy.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`
}

// ClusterFailoverBehavior says how applications leave a failed cluster.
type ClusterFailoverBehavior struct {
	// PurgeMode says how applications are removed from the failed cluster.
	// +optional
	// +kubebuilder:validation:Enum=Directly;Gracefully
	// +kubebuilder:default=Gracefully
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// StatePreservation carries state to the new cluster.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// StatePreservation carries state to the cluster an application moves to.
type StatePreservation struct {
	// Rules pick values from the old status and label the new object with them.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Rules []StatePreservationRule `json:"rules"`
}

// StatePreservationRule picks one value.
type StatePreservationRule struct {
	// AliasLabelName is the label the value is stored under.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	AliasLabelName string `json:"aliasLabelName"`
	// JSONPath selects the value from the old status.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	JSONPath string `json:"jsonPath"`
}

// +kubebuilder:object:root=true

// PropagationPolicyList is a list of PropagationPolicies.
type PropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PropagationPolicy `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterPropagationPolicyList is a list of ClusterPropagationPolicies.
type ClusterPropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPropagationPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PropagationPolicy{}, &PropagationPolicyList{},
		&ClusterPropagationPolicy{}, &ClusterPropagationPolicyList{})
}
