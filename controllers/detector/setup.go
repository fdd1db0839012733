package detector

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/resourceselector"
)

// Options tune the detector.
type Options struct {
	// Workers is the number of templates reconciled at once.
	Workers int
	// DiscoveryInterval is how often new template kinds are looked for, besides CRD changes.
	DiscoveryInterval time.Duration
}

// SetupWithManager starts the detector's controller and its bounded watches of templates
// (see watcher). It wraps r.Client so that the detector's reads of template metadata go to
// those watches (see templateClient): r.Client must be set before.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.DiscoveryInterval <= 0 {
		opts.DiscoveryInterval = 5 * time.Minute
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
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
	if err := setupPolicyIndexes(mgr); err != nil {
		return err
	}
	if err := setupBindingIndexes(context.Background(), mgr); err != nil {
		return err
	}
	r.watcher = newWatcher(mgr.GetCache(), disco, meta, dyn, mgr.GetAPIReader(), opts.DiscoveryInterval)
	r.Client = &templateClient{Client: r.Client, w: r.watcher}
	// Template events, and the opt-in and opt-out of namespaces, come from the watcher.
	if err := c.Watch(r.watcher.source()); err != nil {
		return err
	}

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
	// A binding changed on the host brings its template back: the detector compares the
	// binding with the policy again, so that what the host holds converges on the policy even
	// when the detector decided on a stale cached copy (a placement edited A→B→A faster than
	// the cache caught up left the host at B), or someone else edited the binding's policy part.
	for _, obj := range []client.Object{&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}} {
		if err := c.Watch(source.TypedKind[client.Object, Key](mgr.GetCache(), obj,
			handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, rb client.Object) []Key {
				return []Key{templateOf(rb)}
			}), bindingChanged())); err != nil {
			return err
		}
	}
	// A template whose policy lists dependentOverrides waits for them: an OverridePolicy
	// created (or deleted) brings back the templates of the policies that name it.
	if err := c.Watch(source.TypedKind[*policyv1alpha1.OverridePolicy, Key](mgr.GetCache(), &policyv1alpha1.OverridePolicy{},
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, op *policyv1alpha1.OverridePolicy) []Key {
			return r.templatesWaitingFor(ctx, op.Namespace, op.Name)
		}), predicate.TypedFuncs[*policyv1alpha1.OverridePolicy]{
			UpdateFunc: func(e event.TypedUpdateEvent[*policyv1alpha1.OverridePolicy]) bool {
				return (e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
			},
		})); err != nil {
		return err
	}
	// A CronFederatedHPA that fires (its status says so), is edited or deleted brings its
	// target back: the binding takes its replicas, or the template's again.
	if err := c.Watch(source.TypedKind[*autoscalingv1alpha1.CronFederatedHPA, Key](mgr.GetCache(), &autoscalingv1alpha1.CronFederatedHPA{},
		handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, cf *autoscalingv1alpha1.CronFederatedHPA) []Key {
			return r.templateOfCron(cf)
		}), predicate.TypedFuncs[*autoscalingv1alpha1.CronFederatedHPA]{
			UpdateFunc: func(e event.TypedUpdateEvent[*autoscalingv1alpha1.CronFederatedHPA]) bool {
				return cronScaleChanged(e.ObjectOld, e.ObjectNew)
			},
		})); err != nil {
		return err
	}
	// A FederatedHPA that decides new replicas, is retargeted or deleted brings its target back.
	if err := c.Watch(source.TypedKind[*autoscalingv1alpha1.FederatedHPA, Key](mgr.GetCache(), &autoscalingv1alpha1.FederatedHPA{},
		handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, h *autoscalingv1alpha1.FederatedHPA) []Key {
			return r.templateOfFHPA(h)
		}), predicate.TypedFuncs[*autoscalingv1alpha1.FederatedHPA]{
			UpdateFunc: func(e event.TypedUpdateEvent[*autoscalingv1alpha1.FederatedHPA]) bool {
				return autoScaleChanged(e.ObjectOld, e.ObjectNew)
			},
		})); err != nil {
		return err
	}
	if err := mgr.Add(r.watcher); err != nil {
		return err
	}
	return (&policyLabeler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}

// IndexPolicyBySelector indexes PropagationPolicies and ClusterPropagationPolicies by the
// kinds and names their resourceSelectors select (resourceselector.IndexKeys): a template's
// reconcile looks only at the policies that may select it, not at every policy.
const IndexPolicyBySelector = "flotilla.io/policy-by-selector"

func setupPolicyIndexes(mgr ctrl.Manager) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &policyv1alpha1.PropagationPolicy{}, IndexPolicyBySelector, func(o client.Object) []string {
		return resourceselector.IndexKeys(o.(*policyv1alpha1.PropagationPolicy).Spec.ResourceSelectors, false)
	}); err != nil {
		return err
	}
	return mgr.GetFieldIndexer().IndexField(ctx, &policyv1alpha1.ClusterPropagationPolicy{}, IndexPolicyBySelector, func(o client.Object) []string {
		return resourceselector.IndexKeys(o.(*policyv1alpha1.ClusterPropagationPolicy).Spec.ResourceSelectors, false)
	})
}

// templatesOfPolicy maps a policy to the templates its selectors select and those it claims
// now, found by their bindings (so that a changed or deleted policy releases them). A policy selecting one template by
// name so maps to that template, not to every template of the kind. The kinds it names are
// watched from now on: templates of a kind watched only now are enqueued by the watch's
// initial list rather than returned here.
func (r *Reconciler) templatesOfPolicy(ctx context.Context, namespace string, spec *policyv1alpha1.PropagationSpec, idLabel, id string) []Key {
	selected := r.watcher.wantSelected(ctx, spec)
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
		for _, gvk := range selected {
			match := selectorMatcher(sel, gvk)
			if match == nil {
				continue
			}
			// A PropagationPolicy selects in its own namespace only.
			ns := namespace
			if sel.Namespace != "" && (ns == "" || ns == sel.Namespace) {
				ns = sel.Namespace
			}
			if sel.Name != "" {
				add(r.watcher.listNamed(ctx, gvk, ns, sel.Name, match))
			} else {
				add(r.watcher.list(ctx, gvk, ns, match))
			}
		}
	}
	if id != "" {
		claimed, err := claimedTemplates(ctx, r.Client, namespace, IndexBindingByClaim, idLabel+"="+id)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Cannot list the templates the policy claims", "policy", idLabel+"="+id)
		}
		add(claimed)
	}
	return out
}

// templatesWaitingFor returns the templates in namespace of the policies whose
// dependentOverrides name the OverridePolicy.
func (r *Reconciler) templatesWaitingFor(ctx context.Context, namespace, name string) []Key {
	var out []Key
	pps := &policyv1alpha1.PropagationPolicyList{}
	if err := r.Client.List(ctx, pps, client.InNamespace(namespace)); err == nil {
		for i := range pps.Items {
			if slices.Contains(pps.Items[i].Spec.DependentOverrides, name) {
				out = append(out, r.templatesOfPolicy(ctx, namespace, &pps.Items[i].Spec, "", "")...)
			}
		}
	}
	cpps := &policyv1alpha1.ClusterPropagationPolicyList{}
	if err := r.Client.List(ctx, cpps); err == nil {
		for i := range cpps.Items {
			if slices.Contains(cpps.Items[i].Spec.DependentOverrides, name) {
				for _, k := range r.templatesOfPolicy(ctx, "", &cpps.Items[i].Spec, "", "") {
					if k.Namespace == namespace {
						out = append(out, k)
					}
				}
			}
		}
	}
	return out
}

// RequeueKind reconciles every watched template of a kind again: its customization changed,
// so its bindings may need another look (see ReplicaInterpreter.Revision).
func (r *Reconciler) RequeueKind(gk schema.GroupKind) {
	r.RequeueMatching(func(k schema.GroupKind) bool { return k == gk })
}

// RequeueMatching is RequeueKind for every watched kind match accepts (the kinds an
// interpreter webhook's rules match, wildcards included).
func (r *Reconciler) RequeueMatching(match func(schema.GroupKind) bool) {
	if r.watcher == nil {
		return
	}
	select {
	case <-r.watcher.queueReady:
	default:
		return // not started (or not the leader): the first sync lists everything anyway
	}
	for gvk := range r.watcher.watchedKinds() {
		if match(gvk.GroupKind()) {
			r.watcher.enqueue(r.watcher.list(context.Background(), gvk, "", nil)...)
		}
	}
}

// templatesInNamespace returns the watched templates of a namespace, of every kind. The
// watcher enqueues them itself when the namespace opts out.
func (r *Reconciler) templatesInNamespace(_ context.Context, ns string) []Key {
	return r.watcher.templatesIn(ns)
}

// policyChanged drops policy updates that change neither spec, labels nor deletion. The
// permanent-id label written with the policy's UID changes nothing either: the detector used
// the UID as the id before it was written (PermanentID), so each template is not looked at
// again for it.
func policyChanged[T client.Object]() predicate.TypedPredicate[T] {
	return predicate.TypedFuncs[T]{
		UpdateFunc: func(e event.TypedUpdateEvent[T]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() || !mapsEqual(labelsButID(o), labelsButID(n)) ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
		},
	}
}

// bindingChanged passes the updates of a claimed binding that may change what the detector
// decides: its spec (the generation) or its labels and annotations. Status writes, creations
// and deletions (the detector's own, or its template's) pass nothing.
func bindingChanged() predicate.TypedPredicate[client.Object] {
	return predicate.TypedFuncs[client.Object]{
		CreateFunc:  func(event.TypedCreateEvent[client.Object]) bool { return false },
		DeleteFunc:  func(event.TypedDeleteEvent[client.Object]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[client.Object]) bool { return false },
		UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			if len(claimIndexValues(n)) == 0 && len(claimIndexValues(o)) == 0 {
				return false // a dependency's binding: the dependencies controller's
			}
			return o.GetGeneration() != n.GetGeneration() || !mapsEqual(o.GetLabels(), n.GetLabels()) ||
				!mapsEqual(o.GetAnnotations(), n.GetAnnotations())
		},
	}
}

// labelsButID is o's labels without its permanent-id label when that label is o's UID, the
// id PermanentID gives o without it.
func labelsButID(o client.Object) map[string]string {
	key := idLabelFor(o)
	l := o.GetLabels()
	if v, ok := l[key]; !ok || v != string(o.GetUID()) {
		return l
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		if k != key {
			out[k] = v
		}
	}
	return out
}
