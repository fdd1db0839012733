// Package v1alpha1 contains the policy.karmada.io/v1alpha1 API: PropagationPolicy,
// ClusterPropagationPolicy, OverridePolicy, ClusterOverridePolicy, ClusterTaintPolicy and
// FederatedResourceQuota.
// +kubebuilder:object:generate=true
// +groupName=policy.karmada.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "policy.karmada.io", Version: "v1alpha1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
