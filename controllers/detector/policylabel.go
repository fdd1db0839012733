package detector

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

// policyLabeler gives every PropagationPolicy and ClusterPropagationPolicy its permanent-id
// label, which Karmada's webhook sets on create: the policy's UID, so the detector can use
// the same id before the label is written. The detector writes it to the templates a policy
// claims.
type policyLabeler struct {
	Client client.Client
}

func (p *policyLabeler) SetupWithManager(mgr ctrl.Manager) error {
	missing := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[idLabelFor(o)] == ""
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("policy-id").
		For(&policyv1alpha1.PropagationPolicy{}, builder.WithPredicates(missing)).
		Complete(labelerFor(p, func() client.Object { return &policyv1alpha1.PropagationPolicy{} })); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("clusterpolicy-id").
		For(&policyv1alpha1.ClusterPropagationPolicy{}, builder.WithPredicates(missing)).
		Complete(labelerFor(p, func() client.Object { return &policyv1alpha1.ClusterPropagationPolicy{} }))
}

func idLabelFor(o client.Object) string {
	if _, ok := o.(*policyv1alpha1.ClusterPropagationPolicy); ok {
		return wellknown.ClusterPropagationPolicyPermanentIDLabel
	}
	return wellknown.PropagationPolicyPermanentIDLabel
}

type labelerFunc func(ctx context.Context, req ctrl.Request) (ctrl.Result, error)

func (f labelerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

func labelerFor(p *policyLabeler, newObj func() client.Object) labelerFunc {
	return func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		obj := newObj()
		if err := p.Client.Get(ctx, req.NamespacedName, obj); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		key := idLabelFor(obj)
		if obj.GetLabels()[key] != "" {
			return ctrl.Result{}, nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: string(obj.GetUID())}}})
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, client.IgnoreNotFound(p.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)))
	}
}
