package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Well-known names of KEP-4322.
const (
	// LabelClusterManagerKey is the label every ClusterProfile carries, with the name of the
	// cluster manager that keeps it (the same value as spec.clusterManager.name).
	LabelClusterManagerKey = "x-k8s.io/cluster-manager"
	// LabelClusterSetKey on a namespace names the ClusterSet whose ClusterProfiles it holds.
	LabelClusterSetKey = "multicluster.x-k8s.io/clusterset"
	// ConditionControlPlaneHealthy says whether the member's control plane is healthy.
	ConditionControlPlaneHealthy = "ControlPlaneHealthy"
	// ConditionJoined says whether the member is under the cluster manager's management.
	ConditionJoined = "Joined"
	// ExecExtensionName is the name of the cluster extension an exec credential plugin reads
	// its per-cluster configuration from (KEP-5339; client-go's ExecCredential
	// spec.cluster.config).
	ExecExtensionName = "client.authentication.k8s.io/exec"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories={multicluster}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="DISPLAY NAME",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="MANAGER",type=string,JSONPath=`.spec.clusterManager.name`
// +kubebuilder:printcolumn:name="VERSION",type=string,JSONPath=`.status.version.kubernetes`
// +kubebuilder:printcolumn:name="HEALTHY",type=string,JSONPath=`.status.conditions[?(@.type=="ControlPlaneHealthy")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterProfile describes one member cluster of a cluster inventory: who manages it, its
// health, version and properties, and how a consumer reaches it.
type ClusterProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the cluster and its cluster manager.
	// +required
	Spec ClusterProfileSpec `json:"spec"`

	// Status is what the cluster manager last observed of the cluster.
	// +optional
	Status ClusterProfileStatus `json:"status,omitempty"`
}

// ClusterProfileSpec names the cluster and the cluster manager that keeps the profile.
type ClusterProfileSpec struct {
	// DisplayName is a human-readable name of the cluster.
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// ClusterManager is the cluster manager that keeps this profile. Immutable.
	// +required
	ClusterManager ClusterManager `json:"clusterManager"`
}

// ClusterManager names a cluster manager. Immutable once set.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="ClusterManager is immutable"
type ClusterManager struct {
	// Name of the cluster manager; the profile's x-k8s.io/cluster-manager label has the same
	// value.
	// +required
	Name string `json:"name"`
}

// ClusterProfileStatus is what the cluster manager observed of the cluster.
type ClusterProfileStatus struct {
	// Conditions of the cluster: ControlPlaneHealthy, Joined.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Version of the cluster.
	// +optional
	Version ClusterVersion `json:"version,omitempty"`

	// Properties of the cluster: well-known names (KEP-2149 ClusterProperty names,
	// topology.kubernetes.io/*) and names of the cluster manager's own.
	// +optional
	// +listType=map
	// +listMapKey=name
	Properties []Property `json:"properties,omitempty"`

	// CredentialProviders is the earlier name of AccessProviders (deprecated upstream in its
	// favour, still read by older consumers); an entry of AccessProviders with the same name
	// wins.
	// +optional
	// +listType=map
	// +listMapKey=name
	CredentialProviders []AccessProvider `json:"credentialProviders,omitempty"`

	// AccessProviders are the ways a consumer can reach the cluster: where its apiserver is
	// and how to trust it; the consumer brings its own credentials, through the provider of
	// the same name in its configuration.
	// +optional
	// +listType=map
	// +listMapKey=name
	AccessProviders []AccessProvider `json:"accessProviders,omitempty"`
}

// ClusterVersion is the cluster's version information.
type ClusterVersion struct {
	// Kubernetes is the cluster's Kubernetes version.
	// +optional
	Kubernetes string `json:"kubernetes,omitempty"`
}

// Property is one named value of the cluster.
type Property struct {
	// Name of the property.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Value of the property.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value"`

	// LastObservedTime is when the value was last observed on the cluster.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	LastObservedTime *metav1.Time `json:"lastObservedTime,omitempty"`
}

// AccessProvider is one way to reach the cluster: its name matches a provider the consumer
// has configured (KEP-5339), which supplies the credentials.
type AccessProvider struct {
	// Name of the provider.
	// +required
	Name string `json:"name"`

	// Cluster is how to reach the cluster's apiserver, in kubeconfig's cluster format.
	// +optional
	Cluster AccessCluster `json:"cluster,omitempty"`
}

// AccessCluster is a kubeconfig cluster entry (client-go's clientcmd/api/v1 Cluster): the
// same JSON field names.
type AccessCluster struct {
	// Server is the apiserver's URL (https://host:port).
	// +required
	Server string `json:"server"`

	// TLSServerName is the name checked on the server's certificate, when not the host of
	// Server.
	// +optional
	TLSServerName string `json:"tls-server-name,omitempty"`

	// InsecureSkipTLSVerify skips verifying the server's certificate.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecure-skip-tls-verify,omitempty"`

	// CertificateAuthority is the path of a CA file.
	// +optional
	CertificateAuthority string `json:"certificate-authority,omitempty"`

	// CertificateAuthorityData is the PEM CA bundle that signed the server's certificate.
	// +optional
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`

	// ProxyURL is the proxy requests go through (http, https, socks5).
	// +optional
	ProxyURL string `json:"proxy-url,omitempty"`

	// DisableCompression opts out of response compression.
	// +optional
	DisableCompression bool `json:"disable-compression,omitempty"`

	// Extensions carry configuration for the consumer's side, for example the exec
	// credential plugin's per-cluster configuration under ExecExtensionName.
	// +optional
	Extensions []NamedExtension `json:"extensions,omitempty"`
}

// NamedExtension is one named extension of a kubeconfig cluster entry.
type NamedExtension struct {
	// Name of the extension.
	// +required
	Name string `json:"name"`

	// Extension is the extension's configuration.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Extension runtime.RawExtension `json:"extension"`
}

// +kubebuilder:object:root=true

// ClusterProfileList is a list of ClusterProfiles.
type ClusterProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProfile `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterProfile{}, &ClusterProfileList{})
}
