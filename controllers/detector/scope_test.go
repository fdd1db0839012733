package detector

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSkippedObject(t *testing.T) {
	ns := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		name string
		want bool
	}{
		{ns, "team-a", false},
		{ns, "default", false},
		{ns, "kube-system", true},
		{ns, "kube-public", true},
		{ns, "flotilla-system", true},
		{ns, "karmada-es-member1", true},
		{ns, "karmada-system", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "kube-root-ca.crt", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "kube-system", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, "default", true},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Namespace"}, "kube-system", false},
	} {
		if got := skippedObject(tc.gvk, tc.name); got != tc.want {
			t.Errorf("skippedObject(%s, %q) = %v, want %v", tc.gvk.Kind, tc.name, got, tc.want)
		}
	}
}

func TestTemplateResource(t *testing.T) {
	for _, tc := range []struct {
		gr   schema.GroupResource
		want bool
	}{
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, true},
		{schema.GroupResource{Resource: "configmaps"}, true},
		{schema.GroupResource{Resource: "pods"}, false},
		{schema.GroupResource{Resource: "configmaps/status"}, false},
		{schema.GroupResource{Group: "example.com", Resource: "widgets"}, true},
		{schema.GroupResource{Group: "multicluster.x-k8s.io", Resource: "serviceexports"}, true},
		// What Flotilla publishes beside a binding: a PlacementDecision in an opted-in
		// namespace was taken for a template and warned about ("No policy match").
		{schema.GroupResource{Group: "multicluster.x-k8s.io", Resource: "placementdecisions"}, false},
		{schema.GroupResource{Group: "multicluster.x-k8s.io", Resource: "clusterprofiles"}, false},
		{schema.GroupResource{Group: "policy.karmada.io", Resource: "propagationpolicies"}, false},
		{schema.GroupResource{Group: "autoscaling.karmada.io", Resource: "cronfederatedhpas"}, false},
		{schema.GroupResource{Group: "config.karmada.io", Resource: "resourceinterpreterwebhookconfigurations"}, false},
		{schema.GroupResource{Group: "apps.karmada.io", Resource: "workloadrebalancers"}, false},
		{schema.GroupResource{Group: "networking.karmada.io", Resource: "multiclusterservices"}, false},
		{schema.GroupResource{Group: "rollouts.flotilla.io", Resource: "rolloutpolicies"}, false},
		{schema.GroupResource{Group: "notkarmada.io", Resource: "things"}, true},
		{schema.GroupResource{Group: "example.flotilla.io", Resource: "caches"}, true},
	} {
		if got := templateResource(tc.gr); got != tc.want {
			t.Errorf("templateResource(%s) = %v, want %v", tc.gr, got, tc.want)
		}
	}
}
