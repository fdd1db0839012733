package detector

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
)

// The claim of a template lives on its binding (Karmada's claim labels and annotations), never
// on the template: Flotilla writes nothing to a template but its status. The detector's memory
// of claims is the manager's cache of bindings, indexed two ways; it is rebuilt from the
// bindings whenever the manager starts.
const (
	// IndexBindingByClaim indexes ResourceBindings and ClusterResourceBindings by their claim
	// label, as label=permanent-id: a policy finds the templates it claims.
	IndexBindingByClaim = "flotilla.io/binding-by-claim"
	// IndexClaimedBindingByKind indexes the bindings that carry a claim, or that one left
	// behind, by their template's kind (schema.GroupVersionKind.String()): a kind newly discovered at start-up finds its
	// claimed templates (those of cluster-scoped kinds are then watched).
	IndexClaimedBindingByKind = "flotilla.io/claimed-binding-by-kind"
)

// claimIndexValues is the IndexBindingByClaim value of a binding.
func claimIndexValues(o client.Object) []string {
	var out []string
	for _, l := range claimLabels {
		if v := o.GetLabels()[l]; v != "" {
			out = append(out, l+"="+v)
		}
	}
	return out
}

// claimedKindIndexValues is the IndexClaimedBindingByKind value of a binding that carries a
// claim, or that a claim left behind (orphan: it keeps its clusters until its template goes,
// so the template's kind must be watched for that).
func claimedKindIndexValues(o client.Object) []string {
	if len(claimIndexValues(o)) == 0 && len(bindings.Spec(o).Clusters) == 0 {
		return nil
	}
	res := bindings.Spec(o).Resource
	return []string{schema.FromAPIVersionAndKind(res.APIVersion, res.Kind).String()}
}

func setupBindingIndexes(ctx context.Context, mgr ctrl.Manager) error {
	for _, obj := range []client.Object{&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, IndexBindingByClaim, claimIndexValues); err != nil {
			return err
		}
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, IndexClaimedBindingByKind, claimedKindIndexValues); err != nil {
			return err
		}
	}
	return nil
}

// claimedTemplates returns the templates whose bindings match the index value: in a namespace
// ("": every namespace, and the ClusterResourceBindings too).
func claimedTemplates(ctx context.Context, c client.Reader, namespace, index, value string) ([]Key, error) {
	rbs := &workv1alpha2.ResourceBindingList{}
	opts := []client.ListOption{client.MatchingFields{index: value}, client.UnsafeDisableDeepCopy}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := c.List(ctx, rbs, opts...); err != nil {
		return nil, err
	}
	out := make([]Key, 0, len(rbs.Items))
	for i := range rbs.Items {
		out = append(out, templateOf(&rbs.Items[i]))
	}
	if namespace != "" {
		return out, nil
	}
	crbs := &workv1alpha2.ClusterResourceBindingList{}
	if err := c.List(ctx, crbs, client.MatchingFields{index: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range crbs.Items {
		out = append(out, templateOf(&crbs.Items[i]))
	}
	return out, nil
}

// templateOf is the key of a binding's template.
func templateOf(rb client.Object) Key {
	res := bindings.Spec(rb).Resource
	return Key{GVK: schema.FromAPIVersionAndKind(res.APIVersion, res.Kind),
		NamespacedName: types.NamespacedName{Namespace: res.Namespace, Name: res.Name}}
}
