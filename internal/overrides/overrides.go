// Package overrides renders a resource template for one member cluster: it applies the
// ClusterOverridePolicies and OverridePolicies that select the template, in Karmada's order,
// and records what it applied. It is pure: no client, no clock, no globals.
//
// Order: ClusterOverridePolicies, then OverridePolicies. Within each, the policy whose
// selector matched less precisely comes first (no selectors or apiVersion/kind only, then a
// labelSelector, then a name), then by policy name, so the most specific policy has the last
// word. Within a policy, its overrideRules whose targetCluster matches the cluster apply in
// order (the deprecated spec.targetCluster and spec.overriders count as one rule). Within a
// rule the overriders apply in this order: image, command, args, labels, annotations, field,
// plaintext, and each list in its own order.
package overrides

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
	"github.com/flotilla-io/flotilla/internal/resourceselector"
)

// AppliedOverrider is one entry of the applied-overrides annotations: the overriders of one
// rule a policy applied. Entries are in the order they were applied; a policy with several
// matching rules has one entry per rule.
type AppliedOverrider struct {
	// PolicyName is the name of the policy (its namespace is the template's).
	PolicyName string `json:"policyName"`
	// Overriders are the rule's overriders, as written in the policy.
	Overriders policyv1alpha1.Overriders `json:"overriders"`
}

// Apply returns a copy of template with every override that applies to it on cluster, and
// the annotations that record them: wellknown.AppliedClusterOverridesAnnotation for
// ClusterOverridePolicies and wellknown.AppliedOverridesAnnotation for OverridePolicies, each
// a JSON list of AppliedOverrider, and absent when nothing of that kind applied. The caller
// puts the annotations on the Work; they are not added to the object.
//
// An OverridePolicy applies only to templates of its own namespace; a policy without
// resourceSelectors selects every template it may apply to. The order is described in the
// package documentation.
//
// On error the template is unchanged and no object is returned: a half-overridden object is
// never propagated. The error names the policy, the rule and the overrider, for example
// "OverridePolicy default/nginx-override rule 0 imageOverrider[0]: ...". Overrides must not
// change the object's kind, namespace or name, which identify it in the member.
func Apply(template *unstructured.Unstructured, cluster *clusterv1alpha1.Cluster,
	clusterPolicies []policyv1alpha1.ClusterOverridePolicy, policies []policyv1alpha1.OverridePolicy,
) (*unstructured.Unstructured, map[string]string, error) {
	if template == nil || cluster == nil {
		return nil, nil, errors.New("overrides: a template and a cluster are required")
	}
	selected, err := selectPolicies(template, clusterPolicies, policies)
	if err != nil {
		return nil, nil, err
	}
	out := template.DeepCopy()
	var appliedCluster, applied []AppliedOverrider
	for _, p := range selected {
		entries, err := p.apply(out, cluster)
		if err != nil {
			return nil, nil, err
		}
		if p.kind == clusterOverridePolicy {
			appliedCluster = append(appliedCluster, entries...)
		} else {
			applied = append(applied, entries...)
		}
	}
	if err := sameIdentity(template, out); err != nil {
		return nil, nil, err
	}
	annotations, err := appliedAnnotations(appliedCluster, applied)
	if err != nil {
		return nil, nil, err
	}
	return out, annotations, nil
}

const (
	clusterOverridePolicy = "ClusterOverridePolicy"
	overridePolicy        = "OverridePolicy"
)

// policy is a ClusterOverridePolicy or OverridePolicy that selects the template.
type policy struct {
	kind      string // clusterOverridePolicy or overridePolicy
	name      string
	id        string // name, or namespace/name: how errors name the policy
	spec      *policyv1alpha1.OverrideSpec
	precision resourceselector.Precision
}

// selectPolicies returns the policies that select the template, in the order they apply.
func selectPolicies(template *unstructured.Unstructured,
	clusterPolicies []policyv1alpha1.ClusterOverridePolicy, policies []policyv1alpha1.OverridePolicy,
) ([]policy, error) {
	var cluster, namespaced []policy
	for i := range clusterPolicies {
		cop := &clusterPolicies[i]
		p := policy{kind: clusterOverridePolicy, name: cop.Name, id: cop.Name, spec: &cop.Spec}
		if ok, err := p.selects(template); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		cluster = append(cluster, p)
	}
	for i := range policies {
		op := &policies[i]
		if op.Namespace != template.GetNamespace() {
			continue
		}
		p := policy{kind: overridePolicy, name: op.Name, id: op.Namespace + "/" + op.Name, spec: &op.Spec}
		if ok, err := p.selects(template); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		namespaced = append(namespaced, p)
	}
	byPrecisionThenName := func(a, b policy) int {
		return cmp.Or(cmp.Compare(a.precision, b.precision), cmp.Compare(a.name, b.name))
	}
	slices.SortStableFunc(cluster, byPrecisionThenName)
	slices.SortStableFunc(namespaced, byPrecisionThenName)
	return append(cluster, namespaced...), nil
}

// selects reports whether the policy selects the template, and records how precisely.
func (p *policy) selects(template *unstructured.Unstructured) (bool, error) {
	if len(p.spec.ResourceSelectors) == 0 {
		p.precision = resourceselector.MatchAll
		return true, nil
	}
	precision, err := resourceselector.BestMatch(p.spec.ResourceSelectors, template)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", p.kind, p.id, err)
	}
	p.precision = precision
	return precision != resourceselector.NoMatch, nil
}

// rule is one override rule and how errors name it.
type rule struct {
	name          string // "rule 0", or "spec.overriders" for the deprecated form
	targetCluster *policyv1alpha1.ClusterAffinity
	overriders    *policyv1alpha1.Overriders
}

// rules returns the policy's rules: its overrideRules, or else the deprecated
// targetCluster and overriders as one rule.
func (p policy) rules() []rule {
	if len(p.spec.OverrideRules) > 0 {
		rules := make([]rule, len(p.spec.OverrideRules))
		for i := range p.spec.OverrideRules {
			r := &p.spec.OverrideRules[i]
			rules[i] = rule{name: fmt.Sprintf("rule %d", i), targetCluster: r.TargetCluster, overriders: &r.Overriders}
		}
		return rules
	}
	if p.spec.Overriders != nil {
		return []rule{{name: "spec.overriders", targetCluster: p.spec.TargetCluster, overriders: p.spec.Overriders}}
	}
	return nil
}

// apply applies the policy's rules that target the cluster to obj, and returns what it
// applied.
func (p policy) apply(obj *unstructured.Unstructured, cluster *clusterv1alpha1.Cluster) ([]AppliedOverrider, error) {
	var applied []AppliedOverrider
	for _, r := range p.rules() {
		ok, err := clusteraffinity.Matches(r.targetCluster, cluster)
		if err != nil {
			return nil, fmt.Errorf("%s %s %s targetCluster: %w", p.kind, p.id, r.name, err)
		}
		if !ok {
			continue
		}
		if err := applyOverriders(obj, r.overriders); err != nil {
			return nil, fmt.Errorf("%s %s %s %w", p.kind, p.id, r.name, err)
		}
		applied = append(applied, AppliedOverrider{PolicyName: p.name, Overriders: *r.overriders.DeepCopy()})
	}
	return applied, nil
}

// applyOverriders applies one rule's overriders in the fixed order. The error starts with
// the overrider, for example "imageOverrider[0]: ...".
func applyOverriders(obj *unstructured.Unstructured, o *policyv1alpha1.Overriders) error {
	for i, io := range o.ImageOverrider {
		if err := applyImageOverrider(obj, io); err != nil {
			return fmt.Errorf("imageOverrider[%d]: %w", i, err)
		}
	}
	for i, co := range o.CommandOverrider {
		if err := applyCommandArgsOverrider(obj, "command", co); err != nil {
			return fmt.Errorf("commandOverrider[%d]: %w", i, err)
		}
	}
	for i, ao := range o.ArgsOverrider {
		if err := applyCommandArgsOverrider(obj, "args", ao); err != nil {
			return fmt.Errorf("argsOverrider[%d]: %w", i, err)
		}
	}
	for i, lo := range o.LabelsOverrider {
		if err := applyMetadataOverrider(obj, "labels", lo); err != nil {
			return fmt.Errorf("labelsOverrider[%d]: %w", i, err)
		}
	}
	for i, ao := range o.AnnotationsOverrider {
		if err := applyMetadataOverrider(obj, "annotations", ao); err != nil {
			return fmt.Errorf("annotationsOverrider[%d]: %w", i, err)
		}
	}
	for i, fo := range o.FieldOverrider {
		if err := applyFieldOverrider(obj, fo); err != nil {
			return fmt.Errorf("fieldOverrider[%d]: %w", i, err)
		}
	}
	for i, po := range o.Plaintext {
		if err := applyPlaintextOverrider(obj, po); err != nil {
			return fmt.Errorf("plaintext[%d]: %w", i, err)
		}
	}
	return nil
}

// sameIdentity checks that overrides left the object's kind, namespace and name alone: the
// Work, the member object and its status are found by them.
func sameIdentity(template, out *unstructured.Unstructured) error {
	for _, f := range []struct{ field, was, is string }{
		{"kind", template.GetKind(), out.GetKind()},
		{"metadata.namespace", template.GetNamespace(), out.GetNamespace()},
		{"metadata.name", template.GetName(), out.GetName()},
	} {
		if f.was != f.is {
			return fmt.Errorf("overrides changed %s from %q to %q: an override must not change the object's identity", f.field, f.was, f.is)
		}
	}
	return nil
}

// appliedAnnotations encodes the applied overriders, leaving out empty lists.
func appliedAnnotations(cluster, namespaced []AppliedOverrider) (map[string]string, error) {
	annotations := map[string]string{}
	for key, list := range map[string][]AppliedOverrider{
		wellknown.AppliedClusterOverridesAnnotation: cluster,
		wellknown.AppliedOverridesAnnotation:        namespaced,
	} {
		if len(list) == 0 {
			continue
		}
		raw, err := json.Marshal(list)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", key, err)
		}
		annotations[key] = string(raw)
	}
	if len(annotations) == 0 {
		return nil, nil
	}
	return annotations, nil
}
