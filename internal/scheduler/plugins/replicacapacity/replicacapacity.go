// Package replicacapacity is the filter plugin that keeps a binding off the clusters where its
// replicas do not fit: by the estimate of CycleState.Room (node by node, less the placements
// not yet reported), a Divided binding needs room for one replica, a Duplicated one for all
// of them. The replicas the binding already has on a cluster count as room there, so a
// placement is never taken away for want of room it already uses. A cluster that has not
// reported its capacity is not filtered.
package replicacapacity

import (
	"fmt"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Name is the plugin's registry name (a Flotilla plugin; Karmada has none of this name).
const Name = "ReplicaCapacity"

// ReasonNoRoom is the rejection reason of a cluster without room for one replica.
const ReasonNoRoom = "had no room for one replica on its nodes"

// Plugin filters out the clusters where the replicas do not fit.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New() Plugin { return Plugin{} }

// Name implements framework.Plugin.
func (Plugin) Name() string { return Name }

// NewFilter returns nil for a binding without replicas or with components (the
// ComponentCapacity filter checks those).
func (Plugin) NewFilter(state *framework.CycleState) (framework.Filter, error) {
	spec := state.Spec
	if spec.Replicas <= 0 || len(spec.Components) > 0 {
		return nil, nil
	}
	need, reason := int32(1), ReasonNoRoom
	if duplicated(state.Placement) {
		need = spec.Replicas
		if need > 1 {
			reason = fmt.Sprintf("had room for fewer than %d replicas on its nodes", need)
		}
	}
	return func(c *clusterv1alpha1.Cluster) string {
		room, known := state.RoomOn(c)
		if !known {
			return ""
		}
		if int64(room)+int64(state.ScheduledReplicas(c.Name)) < int64(need) {
			return reason
		}
		return ""
	}, nil
}

func duplicated(p *policyv1alpha1.Placement) bool {
	rs := p.ReplicaScheduling
	return rs == nil || rs.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDuplicated
}
