package scheduler

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
)

// AppliedPlacement returns the value of the policy.karmada.io/applied-placement annotation
// for a placement: its JSON. A nil placement is written as an empty one, "{}". The scheduler
// reconciler writes it together with spec.clusters after a successful Schedule.
func AppliedPlacement(p *policyv1alpha1.Placement) (string, error) {
	if p == nil {
		p = &policyv1alpha1.Placement{}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode placement: %w", err)
	}
	return string(b), nil
}

// NeedsSchedule reports whether the binding must be scheduled again, and why. It is true when:
//   - the binding has never been scheduled (no applied-placement annotation or no clusters);
//   - spec.placement differs from the applied-placement annotation (compared as JSON
//     values, so formatting and field order do not matter);
//   - spec.rescheduleTriggeredAt is newer than status.lastScheduledTime;
//   - the replicas changed: for a Divided binding the clusters' replicas no longer add up to
//     spec.replicas, otherwise some cluster's replicas differ from spec.replicas;
//   - a target cluster left the snapshot, is being deleted, or no longer matches the cluster
//     affinity in force. (A NoExecute taint does not: the failover controller takes the
//     cluster out of spec.clusters when the placement's toleration runs out, gracefully.)
//
// It is false, with the reason "scheduling is suspended", while spec.suspension.scheduling is
// true, and false with an empty reason in every other case, so nothing churns. A binding that
// was unschedulable (no clusters, or replicas that do not add up) always needs scheduling:
// the scheduler controller retries it when a cluster's capacity, taints or labels change, and
// after a per-binding exponential backoff (5 s doubling to 5 min), never in a tight loop.
func NeedsSchedule(in Input, clusters []*clusterv1alpha1.Cluster) (bool, string) {
	spec, status := in.Spec, in.Status
	if spec == nil {
		spec = &workv1alpha2.ResourceBindingSpec{}
	}
	if status == nil {
		status = &workv1alpha2.ResourceBindingStatus{}
	}
	if s := spec.Suspension; s != nil && s.Scheduling != nil && *s.Scheduling {
		return false, "scheduling is suspended"
	}
	applied, ok := in.Annotations[wellknown.AppliedPlacementAnnotation]
	if !ok || len(spec.Clusters) == 0 {
		return true, "never scheduled"
	}
	for _, check := range []func() string{
		func() string { return placementChanged(applied, spec.Placement) },
		func() string { return rescheduleTriggered(spec, status) },
		func() string { return replicasChanged(spec) },
		func() string { return targetUnfit(spec, status, clusters) },
	} {
		if reason := check(); reason != "" {
			return true, reason
		}
	}
	return false, ""
}

// placementChanged compares the placement with the applied-placement annotation as JSON
// values.
func placementChanged(applied string, current *policyv1alpha1.Placement) string {
	var was any
	if err := json.Unmarshal([]byte(applied), &was); err != nil {
		return "the applied-placement annotation is not valid JSON"
	}
	now, err := AppliedPlacement(current)
	if err != nil {
		return "placement changed"
	}
	var is any
	if err := json.Unmarshal([]byte(now), &is); err != nil {
		return "placement changed"
	}
	if was == nil { // "null" was written for an unset placement
		was = map[string]any{}
	}
	if !reflect.DeepEqual(was, is) {
		return "placement changed"
	}
	return ""
}

// RescheduleTriggered reports whether the binding's spec.rescheduleTriggeredAt is newer than
// its status.lastScheduledTime: a reschedule from scratch was asked for (Input.Fresh) and has
// not happened yet.
func RescheduleTriggered(in Input) bool {
	if in.Spec == nil {
		return false
	}
	status := in.Status
	if status == nil {
		status = &workv1alpha2.ResourceBindingStatus{}
	}
	return rescheduleTriggered(in.Spec, status) != ""
}

func rescheduleTriggered(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) string {
	at := spec.RescheduleTriggeredAt
	if at == nil {
		return ""
	}
	if last := status.LastScheduledTime; last == nil || last.Before(at) {
		return "reschedule triggered"
	}
	return ""
}

func replicasChanged(spec *workv1alpha2.ResourceBindingSpec) string {
	if HasComponents(spec) {
		return componentsChanged(spec)
	}
	m, err := assignMode(spec, placementOrEmpty(spec))
	if err != nil {
		return "" // Schedule reports an invalid placement; a reschedule changes nothing.
	}
	if m == duplicated {
		want := max(spec.Replicas, 0)
		for _, tc := range spec.Clusters {
			if tc.Replicas != want {
				return fmt.Sprintf("replicas changed: cluster %s has %d, spec.replicas is %d", tc.Name, tc.Replicas, want)
			}
		}
		return ""
	}
	var assigned int64
	for _, tc := range spec.Clusters {
		assigned += int64(tc.Replicas)
	}
	if assigned != int64(spec.Replicas) {
		return fmt.Sprintf("replicas changed: clusters hold %d, spec.replicas is %d", assigned, spec.Replicas)
	}
	return ""
}

// targetUnfit returns why a target cluster can no longer keep the binding.
func targetUnfit(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, clusters []*clusterv1alpha1.Cluster) string {
	placement := placementOrEmpty(spec)
	affinity, err := compileInForce(placement, status.SchedulerObservedAffinityName)
	if err != nil {
		return "invalid cluster affinity: " + err.Error()
	}
	unseen := make(map[string]struct{}, len(spec.Clusters))
	for _, tc := range spec.Clusters {
		unseen[tc.Name] = struct{}{}
	}
	for _, c := range clusters {
		if c == nil {
			continue
		}
		if _, ok := unseen[c.Name]; !ok {
			continue
		}
		delete(unseen, c.Name)
		switch {
		case c.DeletionTimestamp != nil:
			return fmt.Sprintf("cluster %s is being deleted", c.Name)
		case !affinity.Matches(c):
			return fmt.Sprintf("cluster %s no longer matches the cluster affinity", c.Name)
		}
	}
	for _, tc := range spec.Clusters { // in spec order, for a stable message
		if _, ok := unseen[tc.Name]; ok {
			return fmt.Sprintf("cluster %s is gone", tc.Name)
		}
	}
	return ""
}

// affinityInForce is placement.clusterAffinity, or the clusterAffinities group last scheduled
// into (the first group when none is recorded).
func affinityInForce(p *policyv1alpha1.Placement, observed string) *policyv1alpha1.ClusterAffinity {
	if len(p.ClusterAffinities) == 0 {
		return p.ClusterAffinity
	}
	return &p.ClusterAffinities[firstGroup(p.ClusterAffinities, observed)].ClusterAffinity
}

// anyOf matches a cluster that one of its matchers matches.
type anyOf []*clusteraffinity.Matcher

func (a anyOf) Matches(c *clusterv1alpha1.Cluster) bool {
	for _, m := range a {
		if m.Matches(c) {
			return true
		}
	}
	return false
}

// compileInForce compiles the affinity in force; for a clusterAffinities group with
// overflowAffinities a cluster of any of its tiers matches.
func compileInForce(p *policyv1alpha1.Placement, observed string) (anyOf, error) {
	affinities := []*policyv1alpha1.ClusterAffinity{affinityInForce(p, observed)}
	if len(p.ClusterAffinities) > 0 {
		g := &p.ClusterAffinities[firstGroup(p.ClusterAffinities, observed)]
		for i := range g.OverflowAffinities {
			affinities = append(affinities, &g.OverflowAffinities[i].ClusterAffinity)
		}
	}
	out := make(anyOf, len(affinities))
	for i, a := range affinities {
		m, err := clusteraffinity.Compile(a)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

func placementOrEmpty(spec *workv1alpha2.ResourceBindingSpec) *policyv1alpha1.Placement {
	if spec.Placement == nil {
		return &policyv1alpha1.Placement{}
	}
	return spec.Placement
}

// componentsChanged returns why the placed components no longer match spec.components: every
// target cluster holds the whole set (see components.go), so a scaled, added or removed
// component is placed again, and checked against capacity again.
func componentsChanged(spec *workv1alpha2.ResourceBindingSpec) string {
	want := componentReplicas(spec.Components)
	for _, tc := range spec.Clusters {
		if !slices.Equal(tc.Components, want) {
			return fmt.Sprintf("components changed: cluster %s has %s, spec.components are %s", tc.Name, describeReplicas(tc.Components), describeReplicas(want))
		}
	}
	return ""
}

func describeReplicas(rs []workv1alpha2.ComponentReplicas) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s %d", r.Name, r.Replicas)
	}
	return strings.Join(parts, ", ")
}
