package detector

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

// Options tune the detector.
type Options struct {
	// Workers is the number of templates reconciled at once.
	Workers int
	// DiscoveryInterval is how often new template kinds are looked for, besides CRD changes.
	DiscoveryInterval time.Duration
}

// SetupWithManager starts the detector's controller and its discovery of template kinds.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.DiscoveryInterval <= 0 {
		opts.DiscoveryInterval = 5 * time.Minute
	}
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	c, err := controller.NewTyped[Key]("detector", mgr, controller.TypedOptions[Key]{
		Reconciler:              r,
		MaxConcurrentReconciles: opts.Workers,
	})
	if err != nil {
		return err
	}
	r.watcher = newWatcher(mgr.GetCache(), disco, opts.DiscoveryInterval)
	r.watcher.ctrl = c

	if err := c.Watch(source.TypedKind[*policyv1alpha1.PropagationPolicy, Key](mgr.GetCache(), &policyv1alpha1.PropagationPolicy{},
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, pp *policyv1alpha1.PropagationPolicy) []Key {
			return r.templatesOfPolicy(ctx, pp.Namespace, &pp.Spec, wellknown.PropagationPolicyPermanentIDLabel, PermanentID(pp, wellknown.PropagationPolicyPermanentIDLabel))
		}), policyChanged[*policyv1alpha1.PropagationPolicy]())); err != nil {
		return err
	}
	if err := c.Watch(source.TypedKind[*policyv1alpha1.ClusterPropagationPolicy, Key](mgr.GetCache(), &policyv1alpha1.ClusterPropagationPolicy{},
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, cpp *policyv1alpha1.ClusterPropagationPolicy) []Key {
			return r.templatesOfPolicy(ctx, "", &cpp.Spec, wellknown.ClusterPropagationPolicyPermanentIDLabel, PermanentID(cpp, wellknown.ClusterPropagationPolicyPermanentIDLabel))
		}), policyChanged[*policyv1alpha1.ClusterPropagationPolicy]())); err != nil {
		return err
	}
	if err := c.Watch(source.TypedKind[*corev1.Namespace, Key](mgr.GetCache(), &corev1.Namespace{},
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, ns *corev1.Namespace) []Key {
			return r.templatesInNamespace(ctx, ns.Name)
		}), optInChanged())); err != nil {
		return err
	}
	if err := mgr.Add(r.watcher); err != nil {
		return err
	}
	return (&policyLabeler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}

// templatesOfPolicy maps a policy to the templates its selectors may select and those it
// claims now (so that a changed or deleted policy releases them).
func (r *Reconciler) templatesOfPolicy(ctx context.Context, namespace string, spec *policyv1alpha1.PropagationSpec, idLabel, id string) []Key {
	kinds := r.watcher.kinds()
	seen := map[Key]struct{}{}
	var out []Key
	add := func(keys []Key) {
		for _, k := range keys {
			if _, ok := seen[k]; !ok {
				seen[k] = struct{}{}
				out = append(out, k)
			}
		}
	}
	for _, sel := range spec.ResourceSelectors {
		gv, err := schema.ParseGroupVersion(sel.APIVersion)
		if err != nil {
			continue
		}
		gvk := gv.WithKind(sel.Kind)
		if _, ok := kinds[gvk]; !ok {
			continue
		}
		ns := namespace
		if sel.Namespace != "" && (ns == "" || ns == sel.Namespace) {
			ns = sel.Namespace
		}
		add(r.watcher.list(ctx, gvk, ns))
	}
	if id != "" {
		for gvk := range kinds {
			add(r.watcher.list(ctx, gvk, namespace, client.MatchingLabels{idLabel: id}))
		}
	}
	return out
}

func (r *Reconciler) templatesInNamespace(ctx context.Context, ns string) []Key {
	var out []Key
	for gvk, namespaced := range r.watcher.kinds() {
		if namespaced {
			out = append(out, r.watcher.list(ctx, gvk, ns)...)
		}
	}
	return out
}

// policyChanged drops policy updates that change neither spec, labels nor deletion.
func policyChanged[T client.Object]() predicate.TypedPredicate[T] {
	return predicate.TypedFuncs[T]{
		UpdateFunc: func(e event.TypedUpdateEvent[T]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() || !mapsEqual(o.GetLabels(), n.GetLabels()) ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
		},
	}
}

// optInChanged passes namespace events where the opt-in label changed or deletion began.
func optInChanged() predicate.TypedPredicate[*corev1.Namespace] {
	return predicate.TypedFuncs[*corev1.Namespace]{
		CreateFunc: func(e event.TypedCreateEvent[*corev1.Namespace]) bool {
			return e.Object.Labels[wellknown.PropagationLabel] != ""
		},
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Namespace]) bool {
			return e.ObjectOld.Labels[wellknown.PropagationLabel] != e.ObjectNew.Labels[wellknown.PropagationLabel] ||
				(e.ObjectOld.DeletionTimestamp == nil) != (e.ObjectNew.DeletionTimestamp == nil)
		},
		DeleteFunc:  func(event.TypedDeleteEvent[*corev1.Namespace]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[*corev1.Namespace]) bool { return false },
	}
}
