// Package v1alpha1 contains the rollouts.flotilla.io/v1alpha1 API: progressive rollouts of
// template revisions across the fleet. RolloutPolicy (namespaced) and ClusterRolloutPolicy
// (cluster-scoped) select templates as an OverridePolicy does and define ordered stages;
// Rollout is the state of one template's rollout (one per ResourceBinding, same namespace
// and name), with the controls an operator writes (pause, approvals, undo).
// This is Flotilla's own group: Karmada's groups and wire format are left as they are.
// +kubebuilder:object:generate=true
// +groupName=rollouts.flotilla.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "rollouts.flotilla.io", Version: "v1alpha1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
