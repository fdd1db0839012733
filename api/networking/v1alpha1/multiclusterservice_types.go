package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExposureType is how a MultiClusterService exposes its Service.
// +kubebuilder:validation:Enum=CrossCluster;LoadBalancer
type ExposureType string

const (
	// ExposureTypeCrossCluster makes the Service of the provider clusters discoverable in the
	// consumer clusters (an imported Service and EndpointSlices there).
	ExposureTypeCrossCluster ExposureType = "CrossCluster"
	// ExposureTypeLoadBalancer asks for a multi-cluster load balancer. Flotilla does not
	// provide one: it reports the type as not supported.
	ExposureTypeLoadBalancer ExposureType = "LoadBalancer"
)

// ExposurePort is a port of the Service to expose.
type ExposurePort struct {
	// Name is the name of the port.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`
	// Port is the port number.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// ExposureRange names the clusters of a MultiClusterService (deprecated in Karmada in favour
// of providerClusters and consumerClusters; accepted and read as consumerClusters).
type ExposureRange struct {
	// ClusterNames are the clusters' names; empty means all clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	ClusterNames []string `json:"clusterNames,omitempty"`
}

// ClusterSelector names one member cluster.
type ClusterSelector struct {
	// Name is the Cluster's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// MultiClusterServiceSpec says how the Service of the same name and namespace is exposed.
type MultiClusterServiceSpec struct {
	// Types are the exposure types: CrossCluster (supported) and LoadBalancer (reported as
	// not supported).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	Types []ExposureType `json:"types"`
	// Ports are the ports to expose. Empty means every port of the Service.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Ports []ExposurePort `json:"ports,omitempty"`
	// Range limits the consumer clusters (deprecated: use consumerClusters).
	// +optional
	Range ExposureRange `json:"range,omitempty"`
	// ServiceProvisionClusters are the provider clusters' names (deprecated: use
	// providerClusters).
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	ServiceProvisionClusters []string `json:"serviceProvisionClusters,omitempty"`
	// ServiceConsumptionClusters are the consumer clusters' names (deprecated: use
	// consumerClusters).
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	ServiceConsumptionClusters []string `json:"serviceConsumptionClusters,omitempty"`
	// ProviderClusters are the clusters whose Service endpoints are exposed. Empty means
	// every member cluster that has the Service.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	ProviderClusters []ClusterSelector `json:"providerClusters,omitempty"`
	// ConsumerClusters are the clusters that get the imported Service. Empty means every
	// member cluster.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	ConsumerClusters []ClusterSelector `json:"consumerClusters,omitempty"`
}

// Condition types and reasons of a MultiClusterService.
const (
	// MCSConditionServiceApplied says whether the consumers have the imported Service and its
	// endpoints.
	MCSConditionServiceApplied = "ServiceApplied"
	// MCSConditionLoadBalancerSupported is False when LoadBalancer is asked for.
	MCSConditionLoadBalancerSupported = "LoadBalancerSupported"

	// MCSReasonApplied: every consumer has the imported Service.
	MCSReasonApplied = "Applied"
	// MCSReasonApplyFailed: some consumers could not be written; the message says which.
	MCSReasonApplyFailed = "ApplyFailed"
	// MCSReasonNoProviders: no provider cluster has the Service.
	MCSReasonNoProviders = "NoProviders"
	// MCSReasonNotSupported: Flotilla does not provide multi-cluster load balancers.
	MCSReasonNotSupported = "NotSupported"
	// MCSReasonNotRequested: LoadBalancer is not among the types.
	MCSReasonNotRequested = "NotRequested"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcs,categories={karmada-io}
// +kubebuilder:printcolumn:name="TYPES",type=string,JSONPath=`.spec.types`
// +kubebuilder:printcolumn:name="APPLIED",type=string,JSONPath=`.status.conditions[?(@.type=="ServiceApplied")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// MultiClusterService exposes the Service of the same namespace and name across member
// clusters.
type MultiClusterService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says how the Service is exposed.
	Spec MultiClusterServiceSpec `json:"spec"`
	// Status is the Service status (conditions; loadBalancer stays empty).
	// +optional
	Status corev1.ServiceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MultiClusterServiceList is a list of MultiClusterServices.
type MultiClusterServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MultiClusterService `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MultiClusterService{}, &MultiClusterServiceList{})
}
