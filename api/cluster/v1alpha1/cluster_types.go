package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSyncMode says how the control plane reaches a member.
// +kubebuilder:validation:Enum=Push;Pull
type ClusterSyncMode string

const (
	// Push: the control plane writes to the member's apiserver.
	Push ClusterSyncMode = "Push"
	// Pull: an agent in the member pulls its Works from the host.
	Pull ClusterSyncMode = "Pull"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={karmada-io}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="VERSION",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="MODE",type=string,JSONPath=`.spec.syncMode`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="APIENDPOINT",type=string,JSONPath=`.spec.apiEndpoint`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 48",message="metadata.name: a Cluster name must be at most 48 characters (it prefixes the execution namespace karmada-es-<name>)"

// Cluster represents one member cluster of the fleet.
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how to reach and describe the member.
	// +required
	Spec ClusterSpec `json:"spec"`

	// Status is what the cluster controller last observed of the member.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec describes a member cluster and how to reach it.
type ClusterSpec struct {
	// ID uniquely identifies the member; it defaults to the UID of the member's kube-system
	// namespace, so the same member cannot be joined twice under two names.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ID string `json:"id,omitempty"`

	// SyncMode is Push (the control plane writes to the member) or Pull (an agent does).
	// +required
	SyncMode ClusterSyncMode `json:"syncMode"`

	// APIEndpoint is the member's apiserver URL, for example https://10.0.0.1:6443.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && self.matches('^https?://[^/?#@ ]+(/[^?# ]*)?$')",message="apiEndpoint must be an http or https URL with a host and no user info, query or fragment, for example https://10.0.0.1:6443"
	APIEndpoint string `json:"apiEndpoint,omitempty"`

	// SecretRef names the host Secret with the member's credentials: key "token" (a bearer
	// token) and optionally "caBundle" (PEM).
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// ImpersonatorSecretRef names the host Secret with the impersonator's token.
	// +optional
	ImpersonatorSecretRef *LocalSecretReference `json:"impersonatorSecretRef,omitempty"`

	// InsecureSkipTLSVerification skips verifying the member's serving certificate.
	// +optional
	InsecureSkipTLSVerification bool `json:"insecureSkipTLSVerification,omitempty"`

	// ProxyURL is the HTTP proxy to reach the member through.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ProxyURL string `json:"proxyURL,omitempty"`

	// ProxyHeader holds headers sent to the proxy.
	// +optional
	ProxyHeader map[string]string `json:"proxyHeader,omitempty"`

	// Provider is the member's cloud provider, matched by fieldSelector key "provider".
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Provider string `json:"provider,omitempty"`

	// Region is the member's region, matched by fieldSelector key "region".
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Region string `json:"region,omitempty"`

	// Zone is the member's zone. Deprecated: use Zones.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Zone string `json:"zone,omitempty"`

	// Zones are the member's zones, matched by fieldSelector key "zone".
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	Zones []string `json:"zones,omitempty"`

	// Taints keep workloads off the member unless they tolerate them.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Taints []corev1.Taint `json:"taints,omitempty"`

	// ResourceModels grade nodes by their allocatable resources, for capacity estimation.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ResourceModels []ResourceModel `json:"resourceModels,omitempty"`
}

// LocalSecretReference names a Secret in the host.
type LocalSecretReference struct {
	// Namespace of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ResourceModel is one grade of node: nodes whose allocatable resources fall in every range.
type ResourceModel struct {
	// Grade orders models; higher grades hold more resources.
	// +required
	// +kubebuilder:validation:Minimum=0
	Grade uint `json:"grade"`
	// Ranges bound each resource of the grade.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Ranges []ResourceModelRange `json:"ranges"`
}

// ResourceModelRange is the interval [min, max) of one resource.
type ResourceModelRange struct {
	// Name of the resource: cpu, memory, storage or ephemeral-storage.
	// +required
	Name corev1.ResourceName `json:"name"`
	// Min is the inclusive lower bound.
	// +required
	Min resource.Quantity `json:"min"`
	// Max is the exclusive upper bound.
	// +required
	Max resource.Quantity `json:"max"`
}

// ClusterStatus is what the cluster controller observed of a member.
type ClusterStatus struct {
	// KubernetesVersion is the member's apiserver version.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// APIEnablements lists the resources the member serves.
	// +optional
	APIEnablements []APIEnablement `json:"apiEnablements,omitempty"`

	// Conditions: Ready (reasons ClusterReady, ClusterNotReady, ClusterNotReachable).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// NodeSummary counts the member's nodes.
	// +optional
	NodeSummary *NodeSummary `json:"nodeSummary,omitempty"`

	// ResourceSummary sums the member's capacity and its use.
	// +optional
	ResourceSummary *ResourceSummary `json:"resourceSummary,omitempty"`

	// RemedyActions are actions taken on the member.
	// +optional
	RemedyActions []string `json:"remedyActions,omitempty"`
}

// APIEnablement is one group/version served by a member and its resources.
type APIEnablement struct {
	// GroupVersion is "group/version", or "version" for the core group.
	// +required
	GroupVersion string `json:"groupVersion"`
	// Resources served under the group/version.
	// +optional
	Resources []APIResource `json:"resources,omitempty"`
}

// APIResource is one resource of an APIEnablement.
type APIResource struct {
	// Name is the plural resource name, for example deployments.
	// +required
	Name string `json:"name"`
	// Kind is the kind, for example Deployment.
	// +required
	Kind string `json:"kind"`
}

// NodeSummary counts nodes.
type NodeSummary struct {
	// TotalNum is the number of nodes.
	// +optional
	TotalNum int32 `json:"totalNum,omitempty"`
	// ReadyNum is the number of Ready nodes.
	// +optional
	ReadyNum int32 `json:"readyNum,omitempty"`
}

// ResourceSummary sums capacity and use over a member's nodes and pods.
type ResourceSummary struct {
	// Allocatable is the sum of the nodes' allocatable resources.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Allocating is the sum of the requests of pods not yet scheduled.
	// +optional
	Allocating corev1.ResourceList `json:"allocating,omitempty"`
	// Allocated is the sum of the requests of scheduled pods.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
	// AllocatableModelings counts nodes per resource model grade.
	// +optional
	AllocatableModelings []AllocatableModeling `json:"allocatableModelings,omitempty"`
	// NodeGroups is a Flotilla extension (Karmada's ResourceSummary has no such field): the
	// member's schedulable nodes grouped by what each has free, its labels and its taints, so
	// that the scheduler can estimate how many replicas fit node by node. Optional: a
	// Karmada client ignores it, and without it the scheduler estimates from the sums above.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	NodeGroups []NodeGroup `json:"nodeGroups,omitempty"`
	// UnschedulableWorkloads is a Flotilla extension (Karmada's ResourceSummary has no such
	// field; Karmada's descheduler asks a scheduler-estimator per member instead): the
	// workloads that have Pods the member's scheduler could not place (PodScheduled False,
	// reason Unschedulable), found on the same walk of the member's Pods as the sums above,
	// at most 64 of them, those with the most such Pods first. The descheduler reads it.
	// Optional: a Karmada client ignores it.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	UnschedulableWorkloads []UnschedulableWorkload `json:"unschedulableWorkloads,omitempty"`
}

// UnschedulableWorkload is a workload of a member with Pods that its scheduler could not
// place.
type UnschedulableWorkload struct {
	// APIVersion of the workload, for example apps/v1.
	// +required
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind of the workload: Deployment for the Pods of a Deployment's ReplicaSet, else the
	// kind of the Pods' controller (ReplicaSet, StatefulSet, Job, ...).
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Namespace of the workload.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the workload.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Replicas is how many of its Pods are unschedulable.
	// +required
	// +kubebuilder:validation:Minimum=1
	Replicas int32 `json:"replicas"`
	// Since is when the last of those Pods became unschedulable: each of them has been
	// unschedulable at least since then.
	// +required
	Since metav1.Time `json:"since"`
}

// NodeGroup is a set of a member's schedulable nodes (Ready, not cordoned) that have the same
// labels and taints and, per node, at least Free unrequested.
type NodeGroup struct {
	// Count is the number of nodes in the group.
	// +required
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
	// Free is what each node of the group has free at least: its allocatable resources less
	// the requests of the pods bound to it ("pods" counts pod slots). Amounts are rounded
	// down so that similar nodes share a group.
	// +optional
	Free corev1.ResourceList `json:"free,omitempty"`
	// Labels are the nodes' labels, less kubernetes.io/hostname and the other labels that
	// name one node only.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are the nodes' NoSchedule and NoExecute taints.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// AllocatableModeling is the number of nodes in one resource model grade.
type AllocatableModeling struct {
	// Grade of the model.
	// +required
	Grade uint `json:"grade"`
	// Count of nodes in it.
	// +required
	Count int `json:"count"`
}

// +kubebuilder:object:root=true

// ClusterList is a list of Clusters.
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Cluster{}, &ClusterList{})
}
