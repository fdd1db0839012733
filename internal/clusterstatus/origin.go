package clusterstatus

import (
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

// Origin says where a Cluster came from: cluster-api (joined by the Cluster API auto-join),
// registered (a Pull member that registered itself) or joined (kubectl flotilla join).
func Origin(c *clusterv1alpha1.Cluster) string {
	switch {
	case c.Labels[wellknown.OriginLabel] != "":
		return c.Labels[wellknown.OriginLabel]
	case c.Spec.SyncMode == clusterv1alpha1.Pull:
		return "registered"
	default:
		return "joined"
	}
}
