// Package policymatch chooses the PropagationPolicy or ClusterPropagationPolicy that claims a
// resource template. It is pure: the detector passes the template's metadata and the policies.
//
// Order, as in Karmada: a PropagationPolicy beats a ClusterPropagationPolicy; then the higher
// spec.priority; then the more precise selector (name > labelSelector > kind only); then the
// policy name. A claimed template stays with its policy while that policy still selects it,
// unless a better-ranked policy (by kind and priority) has preemption: Always.
package policymatch

import (
	"cmp"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/resourceselector"
)

// Policy is a candidate policy: a PropagationPolicy (Namespace set) or a
// ClusterPropagationPolicy (Namespace empty).
type Policy struct {
	Namespace string
	Name      string
	// PermanentID is the policy's permanent-id label, written to the bindings of the
	// templates it claims.
	PermanentID string
	Spec        *policyv1alpha1.PropagationSpec
	// Deleting policies never claim.
	Deleting bool
}

// IsCluster reports whether p is a ClusterPropagationPolicy.
func (p *Policy) IsCluster() bool { return p.Namespace == "" }

func (p *Policy) priority() int32 { return ptr.Deref(p.Spec.Priority, 0) }

// String names the policy as a user would.
func (p *Policy) String() string {
	if p.IsCluster() {
		return "ClusterPropagationPolicy " + p.Name
	}
	return "PropagationPolicy " + p.Namespace + "/" + p.Name
}

// Claim identifies the policy that claims a template now, from the labels and annotations of
// the template's binding (the template itself is never written); zero when unclaimed.
type Claim struct {
	Cluster   bool
	Namespace string
	Name      string
	// PermanentID is the claiming policy's permanent id. A binding written before the claim's
	// name annotations were (an earlier Flotilla) names its policy by this id alone.
	PermanentID string
}

// IsZero reports whether no policy claims the template.
func (c Claim) IsZero() bool { return c.Name == "" && c.PermanentID == "" }

// Matches reports whether the claim names p: by name, or by permanent id when the claim has
// no name.
func (c Claim) Matches(p *Policy) bool {
	if c.Cluster != p.IsCluster() {
		return false
	}
	if c.Name == "" {
		return c.PermanentID != "" && c.PermanentID == p.PermanentID
	}
	return c.Name == p.Name && (c.Cluster || c.Namespace == p.Namespace)
}

// Result is the choice.
type Result struct {
	// Policy is the chosen policy; nil when none selects the template.
	Policy *Policy
	// Preempted is true when the choice took the template from another policy.
	Preempted bool
}

type ranked struct {
	p    *Policy
	prec resourceselector.Precision
}

// Choose picks the policy for the template. tmpl needs apiVersion, kind, namespace, name and
// labels. Policies whose selectors are invalid are skipped and reported in the error, which is
// returned alongside a valid choice among the rest.
func Choose(tmpl *unstructured.Unstructured, claim Claim, policies []*Policy) (Result, error) {
	var best, current *ranked
	var errs []error
	for _, p := range policies {
		if p.Deleting || p.Spec == nil {
			continue
		}
		if !p.IsCluster() && p.Namespace != tmpl.GetNamespace() {
			continue
		}
		prec, err := resourceselector.BestMatch(p.Spec.ResourceSelectors, tmpl)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		if prec == resourceselector.NoMatch {
			continue
		}
		r := &ranked{p: p, prec: prec}
		if claim.Matches(p) {
			current = r
		}
		if best == nil || better(r, best) {
			best = r
		}
	}
	var err error
	if len(errs) > 0 {
		err = fmt.Errorf("invalid resourceSelectors: %v", errs)
	}
	switch {
	case best == nil:
		return Result{}, err
	case current == nil:
		return Result{Policy: best.p}, err
	case best.p == current.p:
		return Result{Policy: current.p}, err
	case best.p.Spec.Preemption == policyv1alpha1.PreemptAlways && outranks(best.p, current.p):
		return Result{Policy: best.p, Preempted: true}, err
	default:
		return Result{Policy: current.p}, err
	}
}

// better orders candidates: PP before CPP, priority, precision, then name.
func better(a, b *ranked) bool {
	if c := compareKindPriority(a.p, b.p); c != 0 {
		return c > 0
	}
	if a.prec != b.prec {
		return a.prec > b.prec
	}
	if c := cmp.Compare(a.p.Namespace, b.p.Namespace); c != 0 {
		return c < 0
	}
	return a.p.Name < b.p.Name
}

// outranks reports whether a may preempt b: a is a PP and b a CPP, or a has higher priority
// among the same kind.
func outranks(a, b *Policy) bool { return compareKindPriority(a, b) > 0 }

func compareKindPriority(a, b *Policy) int {
	if a.IsCluster() != b.IsCluster() {
		if !a.IsCluster() {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.priority(), b.priority())
}
