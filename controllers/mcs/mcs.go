// Package mcs is the multi-cluster services controller: the Multi-Cluster Services API
// (ServiceExport, ServiceImport of multicluster.x-k8s.io) and Karmada's MultiClusterService
// (networking.karmada.io, type CrossCluster).
//
// A service (one namespace and name) is provided by the members that export it (a
// ServiceExport beside the Service, propagated from a template or applied by Flotilla), or by
// the provider clusters of a MultiClusterService of that name in the host, which then governs
// the service. The controller reads the providers' Services and the EndpointSlices
// kube-controller-manager built for them from the member caches (one label-filtered watch per
// kind and member: the member cache holds only Flotilla-managed objects, and
// kube-controller-manager copies a Service's karmada.io/managed label onto its slices), so a
// pod change in a provider reaches the controller as a watch event, never by polling.
//
// The pure core (internal/mcs) resolves the service (type, ports, conflicts, as the MCS KEP
// says: the oldest export wins) and renders what each consumer gets: a ServiceImport, a
// Service derived-<name> without a selector and EndpointSlices copying the providers'
// endpoints, labelled multicluster.kubernetes.io/service-name, .../source-cluster and
// flotilla.io/managed-by=flotilla-mcs. Member writes run on each member's own workers
// (internal/memberqueue). Every derived object carries those labels, and only objects with
// them are ever updated or deleted: when a service loses its exports or MultiClusterService,
// or a provider goes away, what was derived from it is deleted from every member.
//
// The ServiceExport and ServiceImport CRDs (embedded in sigs.k8s.io/mcs-api) are created in
// every member when missing; a CRD that is already there is left as it is. The host gets
// them from whoever installs Flotilla (the operator does not create CRDs in the host: OLM
// forbids it), and needs them only for ServiceExport templates.
package mcs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	networkingv1alpha1 "github.com/flotilla-io/flotilla/api/networking/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/memberqueue"
	"github.com/flotilla-io/flotilla/internal/memo"
)

const (
	// ControllerName names the controller, its logger and its events.
	ControllerName = "mcs-controller"
	// FieldOwner is the field manager of what the controller writes.
	FieldOwner = "flotilla-mcs"

	// crdEstablishedPoll is how often a member whose MCS CRDs were just created is looked at
	// again until it serves them.
	crdEstablishedPoll = time.Second

	// Event reasons.
	EventReasonLoadBalancerNotSupported = "LoadBalancerNotSupported"
	EventReasonInvalidService           = "InvalidService"
)

// Kinds read from and written to members.
var (
	serviceGVK       = corev1.SchemeGroupVersion.WithKind("Service")
	sliceGVK         = discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")
	exportGVK        = mcsv1alpha1.SchemeGroupVersion.WithKind("ServiceExport")
	importGVK        = mcsv1alpha1.SchemeGroupVersion.WithKind("ServiceImport")
	derivedKinds     = []schema.GroupVersionKind{importGVK, serviceGVK, sliceGVK}
	memberSetupKey   = types.NamespacedName{} // the queue key that installs CRDs and watches
	errForeignObject = errors.New("exists and was not created by Flotilla")
)

// Reconciler reconciles one multi-cluster service (a namespace and name) at a time. Set
// Client, Members and Recorder.
type Reconciler struct {
	// Client reads MultiClusterServices from the manager's cache and writes the host.
	Client client.Client
	// Members holds one connection and cache per member.
	Members *member.Manager
	// Recorder records events on MultiClusterServices.
	Recorder events.EventRecorder
	// MemberWorkers is how many services of one member are written at once.
	MemberWorkers int
	// MemberWorkTimeout bounds one key's work on its member's workers
	// (memberqueue.DefaultTimeout when zero).
	MemberWorkTimeout time.Duration
	// KindServed, when set, is told that the MCS kinds are served in a member (its CRDs are
	// in place and watched), so that the member's API list is collected again at once and
	// ServiceExport templates can be scheduled there without waiting.
	KindServed func(cluster string)

	queues *memberqueue.Queues[types.NamespacedName]
	wake   chan event.GenericEvent
	// plans holds the resolved service by key, to look at again when members come and go; a
	// key without a plan has nothing derived (what a member still has of it is deleted by
	// the work the reconcile that dropped the plan queued, or found by setupMember when the
	// member comes back).
	plans memo.Map[types.NamespacedName, *mcs.Plan]
	// results are the outcomes of the last write of a key into a member that consumes it ("" is
	// success); a member that does not (any more) has none.
	results memo.Map[result, string]
	// crds remembers the members whose MCS CRDs are in place.
	crds memo.Map[string, struct{}]
	// namespaces remembers the namespaces known to exist in consumers.
	namespaces memo.Map[memberNamespace, struct{}]
}

type memberNamespace struct{ cluster, namespace string }

type result struct {
	key     types.NamespacedName
	cluster string
}

// +kubebuilder:rbac:groups=networking.karmada.io,resources=multiclusterservices,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.karmada.io,resources=multiclusterservices/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile resolves one service from the member caches and hands the writes to the members'
// queues.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	mcsObj := &networkingv1alpha1.MultiClusterService{}
	if err := r.Client.Get(ctx, req.NamespacedName, mcsObj); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		mcsObj = nil
	}
	if mcsObj != nil && !mcsObj.DeletionTimestamp.IsZero() {
		mcsObj = nil // going away: nothing is derived from it any more
	}
	in, err := r.input(ctx, req.NamespacedName, mcsObj)
	if errors.Is(err, member.ErrNotSynced) {
		// A provider's cache is still syncing (a member just connected, or its list keeps
		// failing): resolving without it would take its exports away from the consumers for
		// that long. The service keeps its plan and is looked at again.
		log.V(1).Info("Member cache has not synced; keeping the service as it is", "error", err.Error())
		return ctrl.Result{RequeueAfter: notSyncedRetry}, nil
	}
	var plan *mcs.Plan
	var resolveErr error
	if len(in.Exports) > 0 || mcsObj != nil {
		plan, resolveErr = mcs.Resolve(in)
	}
	if plan != nil {
		r.plans.Store(req.NamespacedName, plan)
	} else {
		r.plans.Delete(req.NamespacedName)
	}
	for _, name := range r.Members.Names() {
		r.queues.Add(name, req.NamespacedName)
	}
	if mcsObj != nil {
		if err := r.writeStatus(ctx, mcsObj, plan, resolveErr); err != nil {
			return ctrl.Result{}, err
		}
	}
	if resolveErr != nil {
		log.Info("Cannot resolve the multi-cluster service", "error", resolveErr.Error())
		return ctrl.Result{}, nil // input that cannot succeed; the next change brings it back
	}
	return ctrl.Result{}, nil
}

// notSyncedRetry is when a service whose provider's cache had not synced is looked at
// again. The sync brings the service back too (its objects arrive as events); this is the
// safety net.
const notSyncedRetry = 2 * time.Second

// input collects the service's exports and consumers from the member caches. It runs on the
// controller's shared workers, so it never waits for a member cache to sync: a provider's
// cache that has not synced a kind yet fails it with member.ErrNotSynced.
func (r *Reconciler) input(ctx context.Context, key types.NamespacedName, m *networkingv1alpha1.MultiClusterService) (mcs.Input, error) {
	in := mcs.Input{Namespace: key.Namespace, Name: key.Name}
	names := r.Members.Names()
	slices.Sort(names)
	providers, consumers := names, names
	if m != nil {
		providers = selected(names, m.Spec.ProviderClusters, m.Spec.ServiceProvisionClusters)
		consumers = selected(names, m.Spec.ConsumerClusters, m.Spec.ServiceConsumptionClusters, m.Spec.Range.ClusterNames)
		for _, p := range m.Spec.Ports {
			in.Ports = append(in.Ports, p.Port)
		}
		if !slices.Contains(m.Spec.Types, networkingv1alpha1.ExposureTypeCrossCluster) {
			providers = nil // LoadBalancer only: nothing to import
		}
	}
	in.Consumers = consumers
	for _, name := range providers {
		mem, err := r.Members.Get(name)
		if err != nil {
			continue // not connected: it provides nothing until it is back
		}
		if err := r.watch(ctx, name, serviceGVK, sliceGVK); err != nil {
			ctrl.LoggerFrom(ctx).Info("Cannot watch the member", "Cluster", name, "error", err.Error())
			continue
		}
		var since metav1.Time
		var labels, annotations map[string]string
		if m == nil {
			exp, ok, err := r.export(ctx, mem, mem.NoWait(), key)
			if err != nil {
				return in, err
			}
			if !ok {
				continue
			}
			since = exp.CreationTimestamp
			labels, annotations = exp.Spec.ExportedLabels, exp.Spec.ExportedAnnotations
		}
		e := mcs.Export{Cluster: name, Since: since, Labels: labels, Annotations: annotations}
		svc := &corev1.Service{}
		switch err := getCached(ctx, mem.NoWait(), key, serviceGVK, svc); {
		case err == nil:
			e.Service = svc
			if m != nil {
				e.Since = svc.CreationTimestamp
			}
		case errors.Is(err, member.ErrNotSynced):
			return in, err
		case m != nil:
			continue // a MultiClusterService's providers are the clusters that have the Service
		}
		if e.Service != nil {
			var err error
			if e.Slices, err = r.sourceSlices(ctx, mem, key); err != nil {
				return in, err
			}
		}
		in.Exports = append(in.Exports, e)
	}
	return in, nil
}

// selected returns the members named by the selectors (the first non-empty list), or every
// member when all lists are empty.
func selected(members []string, sel []networkingv1alpha1.ClusterSelector, lists ...[]string) []string {
	var want []string
	for _, s := range sel {
		want = append(want, s.Name)
	}
	for _, l := range lists {
		if len(want) > 0 {
			break
		}
		want = append(want, l...)
	}
	if len(want) == 0 {
		return members
	}
	return slices.DeleteFunc(slices.Clone(members), func(n string) bool { return !slices.Contains(want, n) })
}

// export returns the member's ServiceExport of the service, when its CRD is in place and it
// exists and is not being deleted.
func (r *Reconciler) export(ctx context.Context, mem *member.Member, cached client.Reader, key types.NamespacedName) (*mcsv1alpha1.ServiceExport, bool, error) {
	if _, ok := r.crds.Load(mem.Name); !ok {
		return nil, false, nil
	}
	exp := &mcsv1alpha1.ServiceExport{}
	if err := getCached(ctx, cached, key, exportGVK, exp); err != nil || !exp.DeletionTimestamp.IsZero() {
		if errors.Is(err, member.ErrNotSynced) {
			return nil, false, err
		}
		return nil, false, nil
	}
	return exp, true, nil
}

// sourceSlices are the slices kube-controller-manager built for the provider's Service.
func (r *Reconciler) sourceSlices(ctx context.Context, mem *member.Member, key types.NamespacedName) ([]discoveryv1.EndpointSlice, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(sliceGVK.GroupVersion().WithKind("EndpointSliceList"))
	if err := mem.NoWait().List(ctx, list, client.InNamespace(key.Namespace), client.MatchingLabels{
		discoveryv1.LabelServiceName: key.Name, discoveryv1.LabelManagedBy: mcs.KubeEndpointSliceController,
	}); err != nil {
		if errors.Is(err, member.ErrNotSynced) {
			return nil, err
		}
		return nil, nil
	}
	out := make([]discoveryv1.EndpointSlice, 0, len(list.Items))
	for i := range list.Items {
		s := discoveryv1.EndpointSlice{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &s); err == nil && s.DeletionTimestamp.IsZero() {
			out = append(out, s)
		}
	}
	return out, nil
}

// getCached reads one object from a member cache reader (Cached, or NoWait on shared
// workers; the cache holds unstructured objects) into a typed one.
func getCached(ctx context.Context, cached client.Reader, key types.NamespacedName, gvk schema.GroupVersionKind, into runtime.Object) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := cached.Get(ctx, key, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func (r *Reconciler) watch(ctx context.Context, cluster string, gvks ...schema.GroupVersionKind) error {
	for _, gvk := range gvks {
		if err := r.Members.Watch(ctx, cluster, gvk); err != nil {
			return err
		}
	}
	return nil
}

// writeStatus applies the MultiClusterService's conditions, and records a Warning event when
// LoadBalancer is first reported as not supported.
func (r *Reconciler) writeStatus(ctx context.Context, m *networkingv1alpha1.MultiClusterService, plan *mcs.Plan, resolveErr error) error {
	conds := slices.Clone(m.Status.Conditions)
	applied := metav1.Condition{Type: networkingv1alpha1.MCSConditionServiceApplied, ObservedGeneration: m.Generation}
	switch {
	case !slices.Contains(m.Spec.Types, networkingv1alpha1.ExposureTypeCrossCluster):
		applied.Status, applied.Reason, applied.Message = metav1.ConditionFalse, networkingv1alpha1.MCSReasonNotSupported,
			"No supported type (CrossCluster) is asked for"
	case resolveErr != nil:
		applied.Status, applied.Reason, applied.Message = metav1.ConditionFalse, networkingv1alpha1.MCSReasonApplyFailed, resolveErr.Error()
		if cur := meta.FindStatusCondition(conds, applied.Type); cur == nil || cur.Message != applied.Message {
			r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, EventReasonInvalidService, "Resolve", "%v", resolveErr)
		}
	case len(plan.Providers) == 0:
		applied.Status, applied.Reason, applied.Message = metav1.ConditionFalse, networkingv1alpha1.MCSReasonNoProviders,
			"No provider cluster has the Service yet"
	default:
		var failed []string
		for _, c := range plan.Consumers {
			if v, ok := r.results.Load(result{key: client.ObjectKeyFromObject(m), cluster: c}); ok && v != "" {
				failed = append(failed, c+": "+v)
			}
		}
		if len(failed) > 0 {
			applied.Status, applied.Reason, applied.Message = metav1.ConditionFalse, networkingv1alpha1.MCSReasonApplyFailed, fmt.Sprint(failed)
		} else {
			applied.Status, applied.Reason = metav1.ConditionTrue, networkingv1alpha1.MCSReasonApplied
			applied.Message = fmt.Sprintf("Endpoints of %v are imported into %v", plan.Providers, plan.Consumers)
		}
	}
	lb := metav1.Condition{Type: networkingv1alpha1.MCSConditionLoadBalancerSupported, ObservedGeneration: m.Generation,
		Status: metav1.ConditionTrue, Reason: networkingv1alpha1.MCSReasonNotRequested, Message: "LoadBalancer is not asked for"}
	if slices.Contains(m.Spec.Types, networkingv1alpha1.ExposureTypeLoadBalancer) {
		lb.Status, lb.Reason = metav1.ConditionFalse, networkingv1alpha1.MCSReasonNotSupported
		lb.Message = "Flotilla does not provide multi-cluster load balancers; type LoadBalancer is ignored"
		if cur := meta.FindStatusCondition(conds, lb.Type); cur == nil || cur.Status != metav1.ConditionFalse {
			r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, EventReasonLoadBalancerNotSupported, "Expose", "%s", lb.Message)
		}
	}
	meta.SetStatusCondition(&conds, applied)
	meta.SetStatusCondition(&conds, lb)
	if equality.Semantic.DeepEqual(conds, m.Status.Conditions) {
		return nil
	}
	return applyStatus(ctx, r.Client, networkingv1alpha1.GroupVersion.WithKind("MultiClusterService"),
		types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, &corev1.ServiceStatus{Conditions: conds})
}

// applyStatus writes an object's status by server-side apply, as FieldOwner; an object that
// is gone is not an error.
func applyStatus(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, key types.NamespacedName, status any) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	u.Object["status"] = raw
	return client.IgnoreNotFound(c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldOwner), client.ForceOwnership))
}

// EnsureCRDs creates the ServiceExport and ServiceImport CRDs that are missing. A CRD that
// exists (installed by anyone) is left alone, and one whose kind the cluster serves already
// (its discovery, through c's RESTMapper) is not even asked for: every connection to a member
// calls this, and a create refused as AlreadyExists is still a write request.
func EnsureCRDs(ctx context.Context, c client.Client) error {
	for _, data := range [][]byte{mcscrd.ServiceExportCRD, mcscrd.ServiceImportCRD} {
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &crd.Object); err != nil {
			return fmt.Errorf("the embedded MCS CRD does not parse: %w", err)
		}
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if _, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind}); err == nil {
			continue
		}
		if err := c.Create(ctx, crd, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
	}
	return nil
}
