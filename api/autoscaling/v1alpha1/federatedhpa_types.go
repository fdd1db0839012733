package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=federatedhpas,scope=Namespaced,shortName=fhpa,categories={karmada-io}
// +kubebuilder:printcolumn:JSONPath=`.spec.scaleTargetRef.kind`,name=`REFERENCE-KIND`,type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.scaleTargetRef.name`,name=`REFERENCE-NAME`,type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.minReplicas`,name=`MINPODS`,type=integer
// +kubebuilder:printcolumn:JSONPath=`.spec.maxReplicas`,name=`MAXPODS`,type=integer
// +kubebuilder:printcolumn:JSONPath=`.status.currentReplicas`,name=`REPLICAS`,type=integer
// +kubebuilder:printcolumn:JSONPath=`.status.desiredReplicas`,name=`DESIRED`,type=integer,priority=1
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ScalingActive")].status`,name=`ACTIVE`,type=string,priority=1
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name=`AGE`,type=date

// FederatedHPA scales a template's fleet replicas from resource metrics summed across the
// members that run it, as a HorizontalPodAutoscaler scales a Deployment in one cluster. Flotilla
// never writes the template: status.desiredReplicas becomes the replicas of the template's
// ResourceBinding, which the scheduler divides among the clusters
// (docs/federated-hpa.md).
type FederatedHPA struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the target, the bounds, the metrics and the behavior.
	// +required
	Spec FederatedHPASpec `json:"spec"`

	// Status is a HorizontalPodAutoscaler's status: current and desired replicas, the
	// metrics last read, the last scale time and the conditions AbleToScale, ScalingActive
	// and ScalingLimited.
	// +optional
	Status autoscalingv2.HorizontalPodAutoscalerStatus `json:"status,omitempty"`
}

// FederatedHPASpec is a HorizontalPodAutoscaler's spec (autoscaling/v2).
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="spec.minReplicas must be less than or equal to spec.maxReplicas",fieldPath=".minReplicas"
type FederatedHPASpec struct {
	// ScaleTargetRef is the template to scale: a Deployment, StatefulSet or any kind whose
	// replicas Flotilla knows, in the FederatedHPA's namespace; its pods are the ones whose
	// metrics count.
	// +required
	// +kubebuilder:validation:XValidation:rule="self.kind != '' && self.name != ''",message="spec.scaleTargetRef needs a kind and a name"
	ScaleTargetRef autoscalingv2.CrossVersionObjectReference `json:"scaleTargetRef"`

	// MinReplicas is the lower bound of the fleet's replicas; 1 when not set.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the upper bound of the fleet's replicas; at least 1 and at least
	// minReplicas.
	// +required
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`

	// Metrics decide the replicas (the largest count any metric asks for wins). Resource and
	// ContainerResource metrics are acted on; Pods, Object and External metrics are not
	// (condition ScalingActive=False, reason InvalidMetricSourceType, and a Warning event).
	// When empty: 80% average CPU utilization.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:XValidation:rule="self.type != 'Resource' || has(self.resource)",message="a metric of type Resource needs metrics[].resource"
	// +kubebuilder:validation:items:XValidation:rule="self.type != 'ContainerResource' || has(self.containerResource)",message="a metric of type ContainerResource needs metrics[].containerResource"
	// +kubebuilder:validation:items:XValidation:rule="self.type != 'Pods' || has(self.pods)",message="a metric of type Pods needs metrics[].pods"
	// +kubebuilder:validation:items:XValidation:rule="self.type != 'Object' || has(self.object)",message="a metric of type Object needs metrics[].object"
	// +kubebuilder:validation:items:XValidation:rule="self.type != 'External' || has(self.external)",message="a metric of type External needs metrics[].external"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.resource) || self.resource.target.type != 'Utilization' || has(self.resource.target.averageUtilization)",message="metrics[].resource.target of type Utilization needs averageUtilization"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.resource) || self.resource.target.type != 'AverageValue' || has(self.resource.target.averageValue)",message="metrics[].resource.target of type AverageValue needs averageValue"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.resource) || self.resource.target.type != 'Value'",message="metrics[].resource.target: a Resource metric's target is Utilization or AverageValue, not Value"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.containerResource) || self.containerResource.target.type != 'Utilization' || has(self.containerResource.target.averageUtilization)",message="metrics[].containerResource.target of type Utilization needs averageUtilization"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.containerResource) || self.containerResource.target.type != 'AverageValue' || has(self.containerResource.target.averageValue)",message="metrics[].containerResource.target of type AverageValue needs averageValue"
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`

	// Behavior is how fast the replicas may go up and down (policies, stabilization
	// windows); Kubernetes' defaults when not set.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// +kubebuilder:object:root=true

// FederatedHPAList is a list of FederatedHPAs.
type FederatedHPAList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedHPA `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FederatedHPA{}, &FederatedHPAList{})
}
