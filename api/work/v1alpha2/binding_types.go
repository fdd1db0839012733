package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=rb,categories={karmada-io}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.clustersReady`
// +kubebuilder:printcolumn:name="SCHEDULED",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="FULLYAPPLIED",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="CLUSTERS",type=string,JSONPath=`.spec.clusters[*].name`,priority=1

// ResourceBinding binds a namespaced template to the clusters it is scheduled on.
type ResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template, its requirements and placement, and the scheduled clusters.
	// +required
	Spec ResourceBindingSpec `json:"spec"`

	// Status is the scheduling result and the aggregated status from members.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=crb,categories={karmada-io}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.clustersReady`
// +kubebuilder:printcolumn:name="SCHEDULED",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="FULLYAPPLIED",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="CLUSTERS",type=string,JSONPath=`.spec.clusters[*].name`,priority=1

// ClusterResourceBinding binds a template to clusters; it serves cluster-scoped templates and
// templates claimed by a ClusterPropagationPolicy.
type ClusterResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template, its requirements and placement, and the scheduled clusters.
	// +required
	Spec ResourceBindingSpec `json:"spec"`

	// Status is the scheduling result and the aggregated status from members.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// ResourceBindingSpec is the spec of ResourceBinding and ClusterResourceBinding.
type ResourceBindingSpec struct {
	// Resource is the template.
	// +required
	Resource ObjectReference `json:"resource"`

	// PropagateDeps propagates the resources the template refers to.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// ReplicaRequirements are what one replica needs.
	// +optional
	ReplicaRequirements *ReplicaRequirements `json:"replicaRequirements,omitempty"`

	// Replicas is the template's replica count.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Components are the parts of a multi-component workload.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Components []Component `json:"components,omitempty"`

	// Clusters is the scheduler's result: the clusters and their replicas.
	// +optional
	Clusters []TargetCluster `json:"clusters,omitempty"`

	// Placement is copied from the policy.
	// +optional
	Placement *policyv1alpha1.Placement `json:"placement,omitempty"`

	// GracefulEvictionTasks are clusters being left gracefully.
	// +optional
	GracefulEvictionTasks []GracefulEvictionTask `json:"gracefulEvictionTasks,omitempty"`

	// RequiredBy lists the bindings that depend on this one.
	// +optional
	RequiredBy []BindingSnapshot `json:"requiredBy,omitempty"`

	// SchedulerName is the scheduler that places this binding.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover is copied from the policy.
	// +optional
	Failover *policyv1alpha1.FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution is copied from the policy.
	// +optional
	// +kubebuilder:default=Abort
	ConflictResolution policyv1alpha1.ConflictResolution `json:"conflictResolution,omitempty"`

	// RescheduleTriggeredAt asks for a reschedule when newer than status.lastScheduledTime.
	// +optional
	RescheduleTriggeredAt *metav1.Time `json:"rescheduleTriggeredAt,omitempty"`

	// Suspension pauses scheduling or dispatching.
	// +optional
	Suspension *Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion keeps member objects when the template is deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority orders bindings in the scheduling queue.
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`

	// WorkloadAffinityGroups are the template's affinity groups.
	// +optional
	WorkloadAffinityGroups *WorkloadAffinityGroups `json:"workloadAffinityGroups,omitempty"`
}

// ObjectReference points at a template.
type ObjectReference struct {
	// APIVersion of the template.
	// +required
	APIVersion string `json:"apiVersion"`
	// Kind of the template.
	// +required
	Kind string `json:"kind"`
	// Namespace of the template; empty for cluster-scoped templates.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the template.
	// +required
	Name string `json:"name"`
	// UID of the template.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// ResourceVersion of the template.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ReplicaRequirements are what one replica needs.
type ReplicaRequirements struct {
	// NodeClaim is the replica's node constraints.
	// +optional
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`
	// ResourceRequest is the replica's resource requests.
	// +optional
	ResourceRequest corev1.ResourceList `json:"resourceRequest,omitempty"`
	// Namespace of the template.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// PriorityClassName of the replica's pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ComponentReplicaRequirements are what one replica of a component needs.
type ComponentReplicaRequirements struct {
	// NodeClaim is the replica's node constraints.
	// +optional
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`
	// ResourceRequest is the replica's resource requests.
	// +optional
	ResourceRequest corev1.ResourceList `json:"resourceRequest,omitempty"`
	// PriorityClassName of the replica's pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// NodeClaim is the node constraints of a replica.
type NodeClaim struct {
	// HardNodeAffinity is the pods' required node affinity.
	// +optional
	HardNodeAffinity *corev1.NodeSelector `json:"hardNodeAffinity,omitempty"`
	// NodeSelector is the pods' node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations are the pods' tolerations.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// Component is one part of a multi-component workload.
type Component struct {
	// Name of the component.
	// +required
	// +kubebuilder:validation:MaxLength=32
	Name string `json:"name"`
	// Replicas of the component.
	// +required
	Replicas int32 `json:"replicas"`
	// ReplicaRequirements are what one replica of the component needs.
	// +optional
	ReplicaRequirements *ComponentReplicaRequirements `json:"replicaRequirements,omitempty"`
}

// TargetCluster is one scheduled cluster and its replicas.
type TargetCluster struct {
	// Name of the cluster.
	// +required
	Name string `json:"name"`
	// Replicas on the cluster.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Components are the replicas per component on the cluster.
	// +optional
	Components []ComponentReplicas `json:"components,omitempty"`
}

// ComponentReplicas is the replicas of one component.
type ComponentReplicas struct {
	// Name of the component.
	// +required
	Name string `json:"name"`
	// Replicas of it.
	// +required
	Replicas int32 `json:"replicas"`
}

// GracefulEvictionTask is a cluster being left gracefully.
type GracefulEvictionTask struct {
	// FromCluster is the cluster being left.
	// +required
	FromCluster string `json:"fromCluster"`
	// PurgeMode says how the application is removed from it.
	// +optional
	// +kubebuilder:validation:Enum=Directly;Gracefully;Never
	PurgeMode policyv1alpha1.PurgeMode `json:"purgeMode,omitempty"`
	// Replicas on the cluster being left.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Producer is the controller that made the task.
	// +required
	Producer string `json:"producer"`
	// GracePeriodSeconds is the most time to wait before purging.
	// +optional
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`
	// SuppressDeletion holds the purge back.
	// +optional
	SuppressDeletion *bool `json:"suppressDeletion,omitempty"`
	// PreservedLabelState is state carried to the new cluster.
	// +optional
	PreservedLabelState map[string]string `json:"preservedLabelState,omitempty"`
	// ClustersBeforeFailover are the clusters before the failover.
	// +optional
	ClustersBeforeFailover []string `json:"clustersBeforeFailover,omitempty"`
	// CreationTimestamp is when the task was made.
	// +optional
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`
}

// BindingSnapshot is a binding that depends on this one.
type BindingSnapshot struct {
	// Namespace of the binding.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the binding.
	// +required
	Name string `json:"name"`
	// Clusters of the binding.
	// +optional
	Clusters []TargetCluster `json:"clusters,omitempty"`
}

// Suspension pauses scheduling or dispatching of a binding. The rule that dispatching and
// dispatchingOnClusters are exclusive comes with the inlined policy Suspension.
type Suspension struct {
	policyv1alpha1.Suspension `json:",inline"`

	// Scheduling pauses the scheduler for this binding.
	// +optional
	Scheduling *bool `json:"scheduling,omitempty"`
}

// SchedulePriority is the binding's scheduling priority.
type SchedulePriority struct {
	// Priority: higher is scheduled first.
	// +optional
	// +kubebuilder:default=0
	Priority int32 `json:"priority,omitempty"`
}

// WorkloadAffinityGroups are the template's affinity groups.
type WorkloadAffinityGroups struct {
	// AffinityGroup is the template's affinity group.
	// +optional
	AffinityGroup string `json:"affinityGroup,omitempty"`
	// AntiAffinityGroup is the template's anti-affinity group.
	// +optional
	AntiAffinityGroup string `json:"antiAffinityGroup,omitempty"`
}

// ResourceBindingStatus is the scheduling result and aggregated member status.
type ResourceBindingStatus struct {
	// SchedulerObservedGeneration is the generation the scheduler last acted on.
	// +optional
	SchedulerObservedGeneration int64 `json:"schedulerObservedGeneration,omitempty"`

	// SchedulerObservedAffinityName is the clusterAffinities group last scheduled into.
	// +optional
	SchedulerObservedAffinityName string `json:"schedulerObservingAffinityName,omitempty"`

	// LastScheduledTime is when the binding was last scheduled.
	// +optional
	LastScheduledTime *metav1.Time `json:"lastScheduledTime,omitempty"`

	// Conditions: Scheduled and FullyApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// AggregatedStatus is the status of the template in each cluster.
	// +optional
	AggregatedStatus []AggregatedStatusItem `json:"aggregatedStatus,omitempty"`

	// ClustersReady is "<ready>/<scheduled>": of the clusters the binding is scheduled to,
	// how many have the template applied and Healthy. Flotilla's own field, beside
	// Karmada's; Karmada clients ignore it.
	// +optional
	ClustersReady string `json:"clustersReady,omitempty"`
}

// AggregatedStatusItem is the template's status in one cluster.
type AggregatedStatusItem struct {
	// ClusterName is the member.
	// +required
	ClusterName string `json:"clusterName"`
	// Status is the member object's reflected status.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *runtime.RawExtension `json:"status,omitempty"`
	// Applied says whether the manifest is applied in the member.
	// +optional
	Applied bool `json:"applied,omitempty"`
	// AppliedMessage says why not.
	// +optional
	AppliedMessage string `json:"appliedMessage,omitempty"`
	// Health of the member object.
	// +optional
	Health workv1alpha1.ResourceHealth `json:"health,omitempty"`
}

// +kubebuilder:object:root=true

// ResourceBindingList is a list of ResourceBindings.
type ResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceBinding `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterResourceBindingList is a list of ClusterResourceBindings.
type ClusterResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterResourceBinding `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceBinding{}, &ResourceBindingList{},
		&ClusterResourceBinding{}, &ClusterResourceBindingList{})
}
