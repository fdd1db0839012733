// Package apienablement is the filter plugin that keeps a binding off clusters that do not
// serve its template's API: status.apiEnablements must list the template's groupVersion with
// a resource of its kind. A cluster that has not reported any APIs yet is rejected too: its
// status has not been collected, so nothing is known to work there.
package apienablement

import (
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name (Karmada's name for the same plugin).
const Name = "APIEnablement"

// ReasonAPIsNotReported is the rejection reason of a cluster whose status.apiEnablements is
// still empty.
const ReasonAPIsNotReported = "had not reported their APIs yet"

// Plugin filters clusters by the APIs they serve.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter returns the check for the template's apiVersion and kind, or nil when the binding
// names no kind.
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	gv, kind := state.Spec.Resource.APIVersion, state.Spec.Resource.Kind
	if kind == "" {
		return nil, nil
	}
	notServed := ReasonNotServed(gv, kind)
	return func(c *clusterv1alpha1.Cluster) string {
		if len(c.Status.APIEnablements) == 0 {
			return ReasonAPIsNotReported
		}
		if Serves(c, gv, kind) {
			return ""
		}
		return notServed
	}, nil
}

// Serves reports whether the cluster lists the kind under the groupVersion in
// status.apiEnablements.
func Serves(c *clusterv1alpha1.Cluster, groupVersion, kind string) bool {
	for i := range c.Status.APIEnablements {
		e := &c.Status.APIEnablements[i]
		if e.GroupVersion != groupVersion {
			continue
		}
		for j := range e.Resources {
			if e.Resources[j].Kind == kind {
				return true
			}
		}
	}
	return false
}

// ReasonNotServed is the rejection reason of a cluster that does not serve the API, for
// example "did not serve apps/v1, Kind=Deployment".
func ReasonNotServed(groupVersion, kind string) string {
	return "did not serve " + groupVersion + ", Kind=" + kind
}
