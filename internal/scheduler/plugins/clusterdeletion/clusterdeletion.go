// Package clusterdeletion is the filter plugin that never lets a binding onto a cluster that
// is being deleted (its deletionTimestamp is set). The scheduler refuses to disable it.
package clusterdeletion

import (
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name.
const Name = "ClusterDeletion"

// ReasonDeleting is the rejection reason of a cluster being deleted.
const ReasonDeleting = "had been marked for deletion"

// Plugin filters out clusters being deleted.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter returns the check; it needs nothing from the binding.
func (Plugin) NewFilter(*framework.CycleState) (framework.Filter, error) { return filter, nil }

func filter(c *clusterv1alpha1.Cluster) string {
	if c.DeletionTimestamp != nil {
		return ReasonDeleting
	}
	return ""
}
