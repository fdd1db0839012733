// Package notacted names the fields of a user's object that Flotilla accepts, so that Karmada
// YAML using them applies and reads back unchanged, but does not act on yet. A controller
// says so on the object (controllers/notacted) instead of ignoring what the user wrote; the
// docs/api-compatibility.md lists the same fields under "Accepted and kept, not acted on yet".
package notacted

import (
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Field is one field set on an object and what Flotilla does with it.
type Field struct {
	// Path is the field's path in the object, e.g. spec.proxyHeader.
	Path string
	// Effect says what happens instead: "ignored", or what part is acted on.
	Effect string
}

func (f Field) String() string { return f.Path + " (" + f.Effect + ")" }

const ignored = "ignored"

// Propagation returns the fields set in a PropagationPolicy's or ClusterPropagationPolicy's
// spec that Flotilla does not act on, in the spec's order. It returns none: every field of the
// spec is acted on (placement.workloadAffinity and clusterAffinities[].overflowAffinities, the
// last two, are the scheduler's since issue 36). The policies keep their warner, so that a
// field Karmada adds later is reported here first.
func Propagation(*policyv1alpha1.PropagationSpec) []Field { return nil }

// Cluster returns the fields set in a Cluster's spec that Flotilla does not act on.
func Cluster(s *clusterv1alpha1.ClusterSpec) []Field {
	var out []Field
	if s.ImpersonatorSecretRef != nil {
		out = append(out, Field{"spec.impersonatorSecretRef", "ignored: the member is reached with spec.secretRef's credential"})
	}
	if len(s.ProxyHeader) > 0 {
		out = append(out, Field{"spec.proxyHeader", "ignored: spec.proxyURL is used without extra headers"})
	}
	return out
}
