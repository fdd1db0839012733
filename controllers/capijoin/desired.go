package capijoin

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// Action is what to do about a Cluster API Cluster.
type Action string

const (
	// Join the member (or bring the joined member's labels and location up to date).
	Join Action = "Join"
	// Wait for the control plane: labelled, not initialized yet.
	Wait Action = "Wait"
	// Unjoin the member, if there is one: the Cluster API Cluster is not (or no longer)
	// labelled for the fleet, or is being deleted.
	Unjoin Action = "Unjoin"
)

// Member is the Flotilla Cluster a Cluster API Cluster joins as.
type Member struct {
	// Name of the Flotilla Cluster.
	Name string
	// Labels copied from the Cluster API Cluster (not those of Cluster API or Flotilla's
	// join labels), plus the origin label.
	Labels map[string]string
	// Provider, Region and Zones of the member.
	Provider, Region string
	Zones            []string
	// KeepWorkloads leaves the workloads in the member when it is unjoined.
	KeepWorkloads bool
}

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Member is the Flotilla Cluster, for Join and Unjoin.
	Member Member
	// Why explains the action, for events and logs.
	Why string
}

// Decide says what to do about a Cluster API Cluster, from it alone.
func Decide(c *clusterv1beta2.Cluster) Decision {
	m := member(c)
	switch {
	case !c.DeletionTimestamp.IsZero():
		return Decision{Unjoin, m, "the Cluster API Cluster is being deleted"}
	case c.Labels[wellknown.CAPIJoinLabel] != "true":
		return Decision{Unjoin, m, "the Cluster API Cluster is not labelled " + wellknown.CAPIJoinLabel + "=true"}
	case !controlPlaneInitialized(c):
		return Decision{Wait, m, "waiting for the control plane to be initialized"}
	}
	return Decision{Join, m, "the control plane is initialized"}
}

// controlPlaneInitialized: status.initialization.controlPlaneInitialized, or the condition
// ControlPlaneInitialized.
func controlPlaneInitialized(c *clusterv1beta2.Cluster) bool {
	if p := c.Status.Initialization.ControlPlaneInitialized; p != nil && *p {
		return true
	}
	return meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1beta2.ClusterControlPlaneInitializedCondition)
}

// member maps the Cluster API Cluster onto the Flotilla Cluster: name, labels, provider,
// region and zones.
func member(c *clusterv1beta2.Cluster) Member {
	m := Member{Name: c.Name, Labels: map[string]string{wellknown.OriginLabel: wellknown.OriginClusterAPI},
		KeepWorkloads: c.Labels[wellknown.CAPIKeepWorkloadsLabel] == "true"}
	if n := c.Labels[wellknown.CAPIMemberNameLabel]; n != "" {
		m.Name = n
	}
	for k, v := range c.Labels {
		if strings.HasPrefix(k, "cluster.x-k8s.io/") || strings.Contains(k, ".cluster.x-k8s.io/") ||
			k == wellknown.CAPIJoinLabel || k == wellknown.CAPIKeepWorkloadsLabel || k == wellknown.CAPIMemberNameLabel || k == wellknown.CAPIProviderLabel {
			continue
		}
		m.Labels[k] = v
	}
	m.Provider = c.Labels[wellknown.CAPIProviderLabel]
	if m.Provider == "" {
		m.Provider = strings.ToLower(strings.TrimSuffix(c.Spec.InfrastructureRef.Kind, "Cluster"))
	}
	m.Region = c.Labels["topology.kubernetes.io/region"]
	if z := c.Labels["topology.kubernetes.io/zone"]; z != "" {
		m.Zones = []string{z}
	} else {
		for _, fd := range c.Status.FailureDomains {
			if fd.Name != "" {
				m.Zones = append(m.Zones, fd.Name)
			}
		}
		slices.Sort(m.Zones)
		m.Zones = slices.Compact(m.Zones)
	}
	return m
}

// KubeconfigSecretName is the Secret Cluster API writes with the admin kubeconfig of a
// Cluster, in its namespace, under the key KubeconfigSecretKey.
func KubeconfigSecretName(cluster string) string { return cluster + "-kubeconfig" }

// KubeconfigSecretKey is the key of the kubeconfig in KubeconfigSecretName.
const KubeconfigSecretKey = "value"
