// Package notacted warns about fields of PropagationPolicies, ClusterPropagationPolicies and
// Clusters that Flotilla accepts but does not act on yet (internal/notacted): a Warning event
// on the object, once per generation that sets them, so that what a user wrote is never
// ignored in silence.
package notacted

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/memo"
	"github.com/flotilla-io/flotilla/internal/notacted"
)

// ControllerName names the controllers and their events' reporter.
const ControllerName = "fields-not-acted-on"

// warner is the controller of one kind.
type warner[T client.Object] struct {
	client   client.Client
	recorder events.EventRecorder
	newObj   func() T
	fields   func(T) []notacted.Field
	// warned is, by object, the generation last warned about: a restart warns once more.
	warned memo.Map[types.NamespacedName, generation]
}

type generation struct {
	uid types.UID
	gen int64
}

// Reconcile warns about one object when this generation of it sets fields not acted on.
func (w *warner[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := w.newObj()
	if err := w.client.Get(ctx, req.NamespacedName, obj); err != nil {
		w.warned.Delete(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	fields := w.fields(obj)
	if len(fields) == 0 {
		w.warned.Delete(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	seen := generation{obj.GetUID(), obj.GetGeneration()}
	if last, ok := w.warned.Load(req.NamespacedName); ok && last == seen {
		return ctrl.Result{}, nil
	}
	list := make([]string, len(fields))
	for i, f := range fields {
		list[i] = f.String()
	}
	w.recorder.Eventf(obj, nil, corev1.EventTypeWarning, wellknown.EventReasonFieldsNotActedOn, "Validate",
		"Flotilla accepts but does not act on these fields yet: %s. The rest of the object is acted on", strings.Join(list, "; "))
	w.warned.Store(req.NamespacedName, seen)
	return ctrl.Result{}, nil
}

// +kubebuilder:rbac:groups=policy.karmada.io,resources=propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager adds one controller per kind, on the leader (one warning per change, not
// one per replica).
func SetupWithManager(mgr ctrl.Manager) error {
	rec := mgr.GetEventRecorder(ControllerName)
	pp := &warner[*policyv1alpha1.PropagationPolicy]{client: mgr.GetClient(), recorder: rec,
		newObj: func() *policyv1alpha1.PropagationPolicy { return &policyv1alpha1.PropagationPolicy{} },
		fields: func(p *policyv1alpha1.PropagationPolicy) []notacted.Field { return notacted.Propagation(&p.Spec) }}
	cpp := &warner[*policyv1alpha1.ClusterPropagationPolicy]{client: mgr.GetClient(), recorder: rec,
		newObj: func() *policyv1alpha1.ClusterPropagationPolicy { return &policyv1alpha1.ClusterPropagationPolicy{} },
		fields: func(p *policyv1alpha1.ClusterPropagationPolicy) []notacted.Field {
			return notacted.Propagation(&p.Spec)
		}}
	cl := &warner[*clusterv1alpha1.Cluster]{client: mgr.GetClient(), recorder: rec,
		newObj: func() *clusterv1alpha1.Cluster { return &clusterv1alpha1.Cluster{} },
		fields: func(c *clusterv1alpha1.Cluster) []notacted.Field { return notacted.Cluster(&c.Spec) }}
	// Only spec changes matter: the generation.
	changed := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	opts := controller.Options{MaxConcurrentReconciles: 1}
	if err := ctrl.NewControllerManagedBy(mgr).Named(ControllerName+"-propagationpolicy").WithOptions(opts).
		For(&policyv1alpha1.PropagationPolicy{}, changed).Complete(pp); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named(ControllerName+"-clusterpropagationpolicy").WithOptions(opts).
		For(&policyv1alpha1.ClusterPropagationPolicy{}, changed).Complete(cpp); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName+"-cluster").WithOptions(opts).
		For(&clusterv1alpha1.Cluster{}, changed).Complete(cl)
}
