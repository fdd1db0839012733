package framework

import (
	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// CycleState is what one scheduling cycle knows about the binding. The scheduler builds it
// once per cycle (once per clusterAffinities group tried); plugins read it and must not
// modify it.
type CycleState struct {
	// Spec is the binding's spec. Never nil.
	Spec *workv1alpha2.ResourceBindingSpec
	// Status is the binding's status. Never nil.
	Status *workv1alpha2.ResourceBindingStatus
	// Placement is Spec.Placement, or an empty placement when it is unset. Never nil.
	Placement *policyv1alpha1.Placement
	// Affinity is the cluster affinity in force this cycle: placement.clusterAffinity, or the
	// clusterAffinities group being tried. Nil matches every cluster.
	Affinity *policyv1alpha1.ClusterAffinity
	// AffinityName names the clusterAffinities group being tried; empty otherwise.
	AffinityName string
	// Tiers are the overflow tiers of the clusterAffinities group being tried when it has
	// overflowAffinities: the group's own clusters first (Affinity), then each overflow group
	// in order. A cluster belongs to the first tier it matches; replicas fill the tiers in
	// order and leave them in reverse. Nil for a group without overflowAffinities.
	Tiers []Tier
	// Peers are where the binding's workload-affinity peers are (placement.workloadAffinity,
	// spec.workloadAffinityGroups); the zero value when it has none.
	Peers WorkloadPeers
	// Quotas are the FederatedResourceQuotas of the binding's namespace, each with what the
	// namespace's other bindings already request; nil when the namespace has none.
	Quotas []NamespaceQuota
	// CapacityAware is true when replicas are divided by free capacity (dynamic weights or
	// Aggregated). Only then is Candidate.Available computed.
	CapacityAware bool
	// Room estimates how many more replicas of the binding the cluster can hold: node by
	// node when the cluster reports its node groups, never more than its summed free
	// resources allow, less the placements of other bindings the member has not reported
	// yet. known is false when the cluster has not reported its capacity. The scheduler sets
	// it; use RoomOn, which treats a nil Room as unknown everywhere.
	Room func(cluster *clusterv1alpha1.Cluster) (replicas int32, known bool)

	scheduled map[string]int32
	tie       TieBreaker
}

// NewCycleState returns the state of one cycle for a binding. Nil spec or status stand for
// empty ones. The seed fixes the tie-break order of clusters (see TieBreaker).
func NewCycleState(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, seed string) *CycleState {
	if spec == nil {
		spec = &workv1alpha2.ResourceBindingSpec{}
	}
	if status == nil {
		status = &workv1alpha2.ResourceBindingStatus{}
	}
	placement := spec.Placement
	if placement == nil {
		placement = &policyv1alpha1.Placement{}
	}
	scheduled := make(map[string]int32, len(spec.Clusters))
	for _, tc := range spec.Clusters {
		scheduled[tc.Name] += tc.Replicas
	}
	return &CycleState{
		Spec:      spec,
		Status:    status,
		Placement: placement,
		Affinity:  placement.ClusterAffinity,
		scheduled: scheduled,
		tie:       NewTieBreaker(seed),
	}
}

// IsScheduled reports whether the binding is currently scheduled on the cluster
// (spec.clusters names it).
func (s *CycleState) IsScheduled(cluster string) bool {
	_, ok := s.scheduled[cluster]
	return ok
}

// ScheduledReplicas returns the replicas currently assigned to the cluster in spec.clusters.
func (s *CycleState) ScheduledReplicas(cluster string) int32 { return s.scheduled[cluster] }

// RoomOn returns Room(cluster), or (0, false) when Room is nil.
func (s *CycleState) RoomOn(cluster *clusterv1alpha1.Cluster) (replicas int32, known bool) {
	if s.Room == nil {
		return 0, false
	}
	return s.Room(cluster)
}

// Rank returns the cluster's tie-break rank for this binding: among otherwise equal clusters
// the lower rank wins.
func (s *CycleState) Rank(cluster string) uint64 { return s.tie.Rank(cluster) }

// WithAffinity returns a copy of the state for trying one clusterAffinities group.
func (s *CycleState) WithAffinity(name string, affinity *policyv1alpha1.ClusterAffinity) *CycleState {
	c := *s
	c.AffinityName, c.Affinity, c.Tiers = name, affinity, nil
	return &c
}

// WithGroup returns a copy of the state for trying one clusterAffinities group, with its
// overflowAffinities as tiers when it has any.
func (s *CycleState) WithGroup(g *policyv1alpha1.ClusterAffinityTerm) *CycleState {
	c := s.WithAffinity(g.AffinityName, &g.ClusterAffinity)
	if len(g.OverflowAffinities) == 0 {
		return c
	}
	c.Tiers = make([]Tier, 0, 1+len(g.OverflowAffinities))
	c.Tiers = append(c.Tiers, Tier{Name: g.AffinityName, Affinity: &g.ClusterAffinity})
	for i := range g.OverflowAffinities {
		o := &g.OverflowAffinities[i]
		c.Tiers = append(c.Tiers, Tier{Name: o.AffinityName, Affinity: &o.ClusterAffinity})
	}
	return c
}

// Tier is one tier of a clusterAffinities group with overflowAffinities.
type Tier struct {
	// Name is the group's or the overflow group's affinityName.
	Name string
	// Affinity selects the tier's clusters.
	Affinity *policyv1alpha1.ClusterAffinity
}

// WorkloadPeers are where the other workloads of the binding's workload-affinity groups are:
// the bindings of its namespace whose spec.workloadAffinityGroups name the same affinity or
// anti-affinity group. The scheduler controller lists them; the core only reads them.
type WorkloadPeers struct {
	// Affinity holds, for each peer of the affinity group that has been scheduled, the
	// clusters it is on. A cluster fits only if every such peer is on it. With no scheduled
	// peer (the group's first workload) any cluster fits.
	Affinity [][]string
	// AntiAffinity holds the clusters the peers of the anti-affinity group are on. A
	// cluster holding one does not fit.
	AntiAffinity []string
}

// IsZero reports whether there is nothing to honour.
func (p WorkloadPeers) IsZero() bool { return len(p.Affinity) == 0 && len(p.AntiAffinity) == 0 }

// NamespaceQuota is one FederatedResourceQuota of the binding's namespace, as the scheduler
// controller read it: its overall limit, and what the namespace's other scheduled bindings
// request (their replicas times their replicaRequirements).
type NamespaceQuota struct {
	// Name is the FederatedResourceQuota's name.
	Name string
	// Overall is its spec.overall.
	Overall corev1.ResourceList
	// Requested is what the namespace's other bindings request, in the resources of Overall.
	Requested corev1.ResourceList
}
