// Package v1alpha1 contains the multicluster.x-k8s.io/v1alpha1 API of SIG-Multicluster's
// Cluster Inventory: ClusterProfile (KEP-4322, with the access providers of KEP-5339) and
// PlacementDecision (KEP-5313).
//
// Flotilla publishes these kinds for other tools; it does not serve them as its own API. The
// upstream Go module (sigs.k8s.io/cluster-inventory-api) is not available to this build, so
// the types here were written from the published CRD schemas and the KEP texts, not copied
// from that module. They are wire compatible with it: the same group, version, kinds,
// resource names, scope and JSON field names, so an object written by Flotilla decodes with
// the upstream types and the reverse. Where the schemas differ only in server-side apply
// list semantics (listType=map on conditions, properties and providers) or in validation
// Flotilla's writes always satisfy, the JSON is the same.
//
// +kubebuilder:object:generate=true
// +groupName=multicluster.x-k8s.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is multicluster.x-k8s.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "multicluster.x-k8s.io", Version: "v1alpha1"}

	// SchemeBuilder adds the kinds of the group version to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of the group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
