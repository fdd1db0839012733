package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ric,categories={karmada-io}
// +kubebuilder:printcolumn:name="Target-API-Version",type=string,JSONPath=`.spec.target.apiVersion`
// +kubebuilder:printcolumn:name="Target-Kind",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Loaded",type=string,JSONPath=`.status.conditions[?(@.type=="Loaded")].status`
// +kubebuilder:printcolumn:name="Scripts-Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="ScriptsHealthy")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ResourceInterpreterCustomization tells Flotilla, with Lua scripts, how to interpret one kind:
// its replicas and what each needs, how to give a member its share, which member values to
// keep, which status to reflect and how to add it up, whether a member object is healthy, and
// what it depends on. A script given here takes the place of Flotilla's built-in rule for
// that operation. Changes apply without a restart.
type ResourceInterpreterCustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the customization.
	// +required
	Spec ResourceInterpreterCustomizationSpec `json:"spec"`

	// Status says whether the scripts loaded and how they ran. Flotilla's own field, beside
	// Karmada's spec; Karmada clients ignore it.
	// +optional
	Status ResourceInterpreterCustomizationStatus `json:"status,omitempty"`
}

// ResourceInterpreterCustomizationSpec describes the customization.
type ResourceInterpreterCustomizationSpec struct {
	// Target is the kind the customization applies to.
	// +required
	Target CustomizationTarget `json:"target"`

	// Customizations are the scripts, one per operation.
	// +required
	Customizations CustomizationRules `json:"customizations"`
}

// CustomizationTarget is the kind a customization applies to.
type CustomizationTarget struct {
	// APIVersion of the kind, "group/version" or "v1" for the core group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self.split('/').size() <= 2",message="apiVersion must be 'version' or 'group/version'"
	APIVersion string `json:"apiVersion"`

	// Kind of the objects.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// CustomizationRules are the scripts of a customization, one per operation. Each script
// defines one Lua function, named per operation below.
// +kubebuilder:validation:XValidation:rule="has(self.retention) || has(self.replicaResource) || has(self.componentResource) || has(self.replicaRevision) || has(self.statusReflection) || has(self.statusAggregation) || has(self.healthInterpretation) || has(self.dependencyInterpretation)",message="customizations must set at least one script"
type CustomizationRules struct {
	// Retention keeps values member controllers set: function Retain(desiredObj, observedObj)
	// returns the object to apply.
	// +optional
	Retention *LocalValueRetention `json:"retention,omitempty"`

	// ReplicaResource reads the replicas and what one replica needs:
	// function GetReplicas(desiredObj) returns replicas, requirement (a table shaped as a
	// ResourceBinding's replicaRequirements: nodeClaim, resourceRequest, namespace,
	// priorityClassName). A kind divides between clusters only when it has replicas.
	// +optional
	ReplicaResource *ReplicaResourceRequirement `json:"replicaResource,omitempty"`

	// ComponentResource reads the components of a workload made of several pod templates
	// (Karmada v1.15+; a Flink job's JobManager and TaskManagers, a Ray cluster's head and
	// workers): function GetComponents(desiredObj) returns a list of components, each a
	// table {name, replicas, replicaRequirements}, replicaRequirements shaped as a
	// ResourceBinding's component requirements (nodeClaim, resourceRequest,
	// priorityClassName; kube.accuratePodRequirements of the component's pod template fits).
	// +optional
	ComponentResource *ComponentResourceRequirement `json:"componentResource,omitempty"`

	// ReplicaRevision gives a member its share: function ReviseReplica(desiredObj,
	// desiredReplica) returns the revised object.
	// +optional
	ReplicaRevision *ReplicaRevision `json:"replicaRevision,omitempty"`

	// StatusReflection picks the status to collect from a member:
	// function ReflectStatus(observedObj) returns the status.
	// +optional
	StatusReflection *StatusReflection `json:"statusReflection,omitempty"`

	// StatusAggregation adds the members' statuses up onto the template:
	// function AggregateStatus(desiredObj, statusItems) returns the object with its status
	// set. Each item has clusterName, status, applied and health.
	// +optional
	StatusAggregation *StatusAggregation `json:"statusAggregation,omitempty"`

	// HealthInterpretation says whether a member object is healthy:
	// function InterpretHealth(observedObj) returns a boolean.
	// +optional
	HealthInterpretation *HealthInterpretation `json:"healthInterpretation,omitempty"`

	// DependencyInterpretation lists what an object needs on the same member:
	// function GetDependencies(desiredObj) returns a list of {apiVersion, kind, namespace,
	// name}. Used when the policy sets propagateDeps.
	// +optional
	DependencyInterpretation *DependencyInterpretation `json:"dependencyInterpretation,omitempty"`
}

// LocalValueRetention holds the Retain script.
type LocalValueRetention struct {
	// LuaScript defines function Retain(desiredObj, observedObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	LuaScript string `json:"luaScript"`
}

// ReplicaResourceRequirement holds the GetReplicas script.
type ReplicaResourceRequirement struct {
	// LuaScript defines function GetReplicas(desiredObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	LuaScript string `json:"luaScript"`
}

// ComponentResourceRequirement holds the GetComponents script.
type ComponentResourceRequirement struct {
	// LuaScript defines function GetComponents(desiredObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	LuaScript string `json:"luaScript"`
}

// ReplicaRevision holds the ReviseReplica script.
type ReplicaRevision struct {
	// LuaScript defines function ReviseReplica(desiredObj, desiredReplica).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	LuaScript string `json:"luaScript"`
}

// StatusReflection holds the ReflectStatus script.
type StatusReflection struct {
	// LuaScript defines function ReflectStatus(observedObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	LuaScript string `json:"luaScript"`
}

// StatusAggregation holds the AggregateStatus script.
type StatusAggregation struct {
	// LuaScript defines function AggregateStatus(desiredObj, statusItems).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	LuaScript string `json:"luaScript"`
}

// HealthInterpretation holds the InterpretHealth script.
type HealthInterpretation struct {
	// LuaScript defines function InterpretHealth(observedObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	LuaScript string `json:"luaScript"`
}

// DependencyInterpretation holds the GetDependencies script.
type DependencyInterpretation struct {
	// LuaScript defines function GetDependencies(desiredObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	LuaScript string `json:"luaScript"`
}

// ResourceInterpreterCustomizationStatus says whether the scripts loaded and how they ran.
type ResourceInterpreterCustomizationStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Loaded (the scripts compiled and are in use), ScriptsHealthy (False when
	// a script failed at run time: an error, a wrong result, or the time or memory budget
	// exceeded; the message names the operation and the object).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types and reasons of a ResourceInterpreterCustomization.
const (
	// ConditionLoaded is True when every script compiled and the customization is in use.
	ConditionLoaded = "Loaded"
	// ConditionScriptsHealthy is False when a script failed while running.
	ConditionScriptsHealthy = "ScriptsHealthy"
)

// +kubebuilder:object:root=true

// ResourceInterpreterCustomizationList is a list of ResourceInterpreterCustomizations.
type ResourceInterpreterCustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceInterpreterCustomization `json:"items"`
}

// DependentObjectReference names an object another object depends on: by name, or by label
// selector for all the objects of a kind that match it.
type DependentObjectReference struct {
	// APIVersion of the dependency.
	// +required
	APIVersion string `json:"apiVersion"`
	// Kind of the dependency.
	// +required
	Kind string `json:"kind"`
	// Namespace of the dependency; the dependent's own when empty.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the dependency. Name and LabelSelector are mutually exclusive.
	// +optional
	Name string `json:"name,omitempty"`
	// LabelSelector selects the dependencies by label.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

func init() {
	SchemeBuilder.Register(&ResourceInterpreterCustomization{}, &ResourceInterpreterCustomizationList{})
}
