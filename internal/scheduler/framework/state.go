package framework

import (
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
	// CapacityAware is true when replicas are divided by free capacity (dynamic weights or
	// Aggregated). Only then is Candidate.Available computed.
	CapacityAware bool

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

// Rank returns the cluster's tie-break rank for this binding: among otherwise equal clusters
// the lower rank wins.
func (s *CycleState) Rank(cluster string) uint64 { return s.tie.Rank(cluster) }

// WithAffinity returns a copy of the state for trying one clusterAffinities group.
func (s *CycleState) WithAffinity(name string, affinity *policyv1alpha1.ClusterAffinity) *CycleState {
	c := *s
	c.AffinityName, c.Affinity = name, affinity
	return &c
}
