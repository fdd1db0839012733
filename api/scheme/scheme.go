// Package scheme builds the runtime.Scheme that knows Kubernetes' built-in kinds and every
// Flotilla (Karmada) API group.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	clusterinventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	networkingv1alpha1 "github.com/flotilla-io/flotilla/api/networking/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

var builder = runtime.NewSchemeBuilder(
	appsv1alpha1.AddToScheme,
	autoscalingv1alpha1.AddToScheme,
	rolloutsv1alpha1.AddToScheme,
	clusterv1alpha1.AddToScheme,
	configv1alpha1.AddToScheme,
	networkingv1alpha1.AddToScheme,
	policyv1alpha1.AddToScheme,
	workv1alpha1.AddToScheme,
	workv1alpha2.AddToScheme,
)

// AddToScheme registers every Flotilla API group.
var AddToScheme = builder.AddToScheme

// New returns a scheme with the Kubernetes built-ins and the Flotilla APIs.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(AddToScheme(s))
	// The Multi-Cluster Services API (ServiceExport, ServiceImport), served by CRDs the mcs
	// controller installs into members.
	utilruntime.Must(mcsv1alpha1.AddToScheme(s))
	// The Cluster Inventory API (ClusterProfile, PlacementDecision), which Flotilla
	// publishes for other tools (controllers/clusterprofile, controllers/placementdecision).
	utilruntime.Must(clusterinventoryv1alpha1.AddToScheme(s))
	return s
}
