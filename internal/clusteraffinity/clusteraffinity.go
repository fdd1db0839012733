// Package clusteraffinity decides whether a Cluster matches a ClusterAffinity: the selector
// shared by placements, static weights, clusterAffinities groups and override rules.
package clusteraffinity

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Field selector keys.
const (
	FieldProvider = "provider"
	FieldRegion   = "region"
	FieldZone     = "zone"
)

// Matcher is a compiled ClusterAffinity. Compile once, match many clusters.
type Matcher struct {
	names    map[string]struct{}
	exclude  map[string]struct{}
	labels   labels.Selector // nil: no label constraint
	fields   []fieldRequirement
	matchAll bool
}

type fieldRequirement struct {
	key    string
	in     bool
	values map[string]struct{}
}

// Compile turns an affinity into a Matcher. A nil affinity matches every cluster. The error
// says which part of the selector is invalid.
func Compile(a *policyv1alpha1.ClusterAffinity) (*Matcher, error) {
	if a == nil {
		return &Matcher{matchAll: true}, nil
	}
	m := &Matcher{}
	if len(a.ClusterNames) > 0 {
		m.names = toSet(a.ClusterNames)
	}
	if len(a.Exclude) > 0 {
		m.exclude = toSet(a.Exclude)
	}
	if a.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
		m.labels = sel
	}
	if a.FieldSelector != nil {
		for i, e := range a.FieldSelector.MatchExpressions {
			switch e.Key {
			case FieldProvider, FieldRegion, FieldZone:
			default:
				return nil, fmt.Errorf("fieldSelector.matchExpressions[%d].key %q: must be one of provider, region, zone", i, e.Key)
			}
			var in bool
			switch e.Operator {
			case corev1.NodeSelectorOpIn:
				in = true
			case corev1.NodeSelectorOpNotIn:
			default:
				return nil, fmt.Errorf("fieldSelector.matchExpressions[%d].operator %q: must be In or NotIn", i, e.Operator)
			}
			m.fields = append(m.fields, fieldRequirement{key: e.Key, in: in, values: toSet(e.Values)})
		}
	}
	return m, nil
}

// Matches reports whether the cluster matches: it is not excluded, it is named (when names are
// given), and it matches the label and field selectors.
func (m *Matcher) Matches(c *clusterv1alpha1.Cluster) bool {
	if m.matchAll {
		return true
	}
	if _, ok := m.exclude[c.Name]; ok {
		return false
	}
	if m.names != nil {
		if _, ok := m.names[c.Name]; !ok {
			return false
		}
	}
	if m.labels != nil && !m.labels.Matches(labels.Set(c.Labels)) {
		return false
	}
	for _, r := range m.fields {
		if !r.matches(c) {
			return false
		}
	}
	return true
}

func (r fieldRequirement) matches(c *clusterv1alpha1.Cluster) bool {
	values := FieldValues(c, r.key)
	found := slices.ContainsFunc(values, func(v string) bool { _, ok := r.values[v]; return ok })
	if r.in {
		return found
	}
	return !found
}

// FieldValues returns the cluster's values of a field selector key: one provider, one region,
// and every zone (spec.zones, or the deprecated spec.zone).
func FieldValues(c *clusterv1alpha1.Cluster, key string) []string {
	switch key {
	case FieldProvider:
		return nonEmpty(c.Spec.Provider)
	case FieldRegion:
		return nonEmpty(c.Spec.Region)
	case FieldZone:
		if len(c.Spec.Zones) > 0 {
			return c.Spec.Zones
		}
		return nonEmpty(c.Spec.Zone)
	}
	return nil
}

// Matches compiles the affinity and matches one cluster.
func Matches(a *policyv1alpha1.ClusterAffinity, c *clusterv1alpha1.Cluster) (bool, error) {
	m, err := Compile(a)
	if err != nil {
		return false, err
	}
	return m.Matches(c), nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func toSet(ss []string) map[string]struct{} {
	m := make(map[string]struct{}, len(ss))
	for _, s := range ss {
		m[s] = struct{}{}
	}
	return m
}
