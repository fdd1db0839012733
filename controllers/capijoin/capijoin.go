// Package capijoin joins Cluster API clusters to the fleet by themselves: a Cluster API
// Cluster (cluster.x-k8s.io/v1beta2) labelled flotilla.io/join=true becomes a Push member once
// its control plane is initialized, and is unjoined when the label goes or it is deleted.
//
// The member is joined as `kubectl flotilla join` joins one (internal/join): with the admin
// kubeconfig Cluster API writes (Secret <cluster>-kubeconfig, key value, in the Cluster API
// Cluster's namespace), Flotilla gives itself a least-privilege ServiceAccount in the member,
// guarded, and keeps only that ServiceAccount's token on the host; the admin kubeconfig is
// read, used and never stored. The Flotilla Cluster is named after the Cluster API Cluster
// (or its label flotilla.io/member-name), labelled flotilla.io/origin=cluster-api, annotated
// with the Cluster API Cluster, and gets its labels, provider (its infrastructure's kind,
// or the label flotilla.io/provider), region and zones (the topology labels, or its failure
// domains). Unjoining deletes the member's workloads, or keeps them when the Cluster API
// Cluster is labelled flotilla.io/keep-workloads=true.
//
// Each reconcile decides from the Cluster API Cluster alone (Decide: desired), joins or
// brings the member's labels and location up to date, or unjoins (write), unjoins members
// whose Cluster API Cluster is gone (prune), and records what it did as events on the
// Cluster API Cluster (report). The controller runs only when Cluster API's CRDs are on the
// host when the manager starts.
package capijoin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	clusterv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/join"
)

const (
	// ControllerName names the controller, its logger and its events.
	ControllerName = "cluster-api-join"
	// FieldOwner is the field manager of the member's labels and location.
	FieldOwner = "flotilla-cluster-api-join"
	// DefaultUnjoinTimeout bounds one wait for an unjoined member to go; the reconcile is
	// retried after it.
	DefaultUnjoinTimeout = 30 * time.Second
	// kubeconfigRetry is how soon a member whose kubeconfig Secret is missing is tried again.
	kubeconfigRetry = 10 * time.Second

	EventReasonJoined       = "MemberJoined"
	EventReasonJoinFailed   = "MemberJoinFailed"
	EventReasonWaiting      = "WaitingForControlPlane"
	EventReasonUnjoined     = "MemberUnjoined"
	EventReasonUnjoinFailed = "MemberUnjoinFailed"
)

// Reconciler joins and unjoins Cluster API Clusters. SetupWithManager fills what is unset.
type Reconciler struct {
	// Client reads Cluster API Clusters and Flotilla Clusters from the cache and writes
	// Flotilla Clusters.
	Client client.Client
	// APIReader reads the kubeconfig Secrets (the cache holds no Secret data).
	APIReader client.Reader
	// Recorder records events on Cluster API Clusters.
	Recorder events.EventRecorder
	// Host is the REST config join and unjoin write to the host with: the manager's.
	Host *rest.Config
	// UnjoinTimeout bounds one wait for an unjoined member to go.
	UnjoinTimeout time.Duration
}

// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile joins, updates or unjoins the member of one Cluster API Cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	joined, err := r.joined(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	capi := &clusterv1beta2.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, capi); err != nil {
		if !apierrors.IsNotFound(err) || joined == nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		// Gone while the manager was not looking: its member cannot be reached to clean.
		return ctrl.Result{}, r.unjoin(ctx, nil, joined.Name, nil, joined.Annotations[wellknown.KeepWorkloadsAnnotation] == "true")
	}
	d := Decide(capi)
	switch d.Action {
	case Unjoin:
		if joined == nil {
			return ctrl.Result{}, nil
		}
		cfg, _ := r.kubeconfig(ctx, capi) // without it, what join made in the member stays
		if err := r.unjoin(ctx, capi, joined.Name, cfg, d.Member.KeepWorkloads); err != nil {
			r.Recorder.Eventf(capi, nil, corev1.EventTypeWarning, EventReasonUnjoinFailed, "Unjoin", "Cannot unjoin member %s: %v", joined.Name, err)
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(capi, nil, corev1.EventTypeNormal, EventReasonUnjoined, "Unjoin", "Unjoined member %s (%s; workloads %s)",
			joined.Name, d.Why, map[bool]string{true: "kept", false: "deleted"}[d.Member.KeepWorkloads])
		return ctrl.Result{}, nil
	case Wait:
		if joined == nil {
			r.Recorder.Eventf(capi, nil, corev1.EventTypeNormal, EventReasonWaiting, "Join", "Will join as member %s once the control plane is initialized", d.Member.Name)
		}
		return ctrl.Result{}, nil
	}
	if joined == nil {
		return r.join(ctx, capi, d.Member)
	}
	return ctrl.Result{}, r.sync(ctx, capi, d.Member)
}

// joined is the Flotilla Cluster joined from the Cluster API Cluster key, or nil.
func (r *Reconciler) joined(ctx context.Context, key types.NamespacedName) (*clusterv1alpha1.Cluster, error) {
	list := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{wellknown.OriginLabel: wellknown.OriginClusterAPI}); err != nil {
		return nil, fmt.Errorf("list the Clusters joined from Cluster API: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Annotations[wellknown.CAPIClusterAnnotation] == key.String() {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// join joins the member with the kubeconfig Cluster API wrote. A Cluster of the member's name
// that points elsewhere is another member's, and is left alone; one that points at this
// member's apiserver (joined by hand, or by a join whose labelling failed) is taken over.
func (r *Reconciler) join(ctx context.Context, capi *clusterv1beta2.Cluster, m Member) (ctrl.Result, error) {
	cfg, err := r.kubeconfig(ctx, capi)
	if err != nil {
		r.Recorder.Eventf(capi, nil, corev1.EventTypeWarning, EventReasonJoinFailed, "Join", "%v", err)
		return ctrl.Result{RequeueAfter: kubeconfigRetry}, nil
	}
	// Read from the apiserver, not the cache: a Cluster created a moment ago by someone else
	// must not be taken over.
	taken := &clusterv1alpha1.Cluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: m.Name}, taken); err == nil && taken.Spec.APIEndpoint != cfg.Host {
		r.Recorder.Eventf(capi, nil, corev1.EventTypeWarning, EventReasonJoinFailed, "Join",
			"A Cluster named %s of another member (%s) exists: set the label %s to another name", m.Name, taken.Spec.APIEndpoint, wellknown.CAPIMemberNameLabel)
		return ctrl.Result{}, nil // the label (watched) or the other Cluster must change
	} else if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	zone := ""
	if len(m.Zones) > 0 {
		zone = m.Zones[0]
	}
	if _, err := join.Join(ctx, join.Options{Name: m.Name, Host: r.Host, Member: cfg, Provider: m.Provider, Region: m.Region, Zone: zone}); err != nil {
		r.Recorder.Eventf(capi, nil, corev1.EventTypeWarning, EventReasonJoinFailed, "Join", "Cannot join as member %s: %v", m.Name, err)
		return ctrl.Result{}, err
	}
	if err := r.sync(ctx, capi, m); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Joined a Cluster API cluster", "member", m.Name)
	r.Recorder.Eventf(capi, nil, corev1.EventTypeNormal, EventReasonJoined, "Join", "Joined as member %s", m.Name)
	return ctrl.Result{}, nil
}

// kubeconfig reads the admin kubeconfig Cluster API wrote for the Cluster.
func (r *Reconciler) kubeconfig(ctx context.Context, capi *clusterv1beta2.Cluster) (*rest.Config, error) {
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: capi.Namespace, Name: KubeconfigSecretName(capi.Name)}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("read the kubeconfig Secret %s Cluster API writes: %w", key, err)
	}
	data := secret.Data[KubeconfigSecretKey]
	if len(data) == 0 {
		return nil, fmt.Errorf("the kubeconfig Secret %s has no key %q", key, KubeconfigSecretKey)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig in Secret %s: %w", key, err)
	}
	return cfg, nil
}

// sync applies the member's labels, annotations and location to its Flotilla Cluster when
// they differ.
func (r *Reconciler) sync(ctx context.Context, capi *clusterv1beta2.Cluster, m Member) error {
	cur := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: m.Name}, cur); err != nil {
		if apierrors.IsNotFound(err) { // joined a moment ago: the cache has not seen it yet
			if err := r.APIReader.Get(ctx, client.ObjectKey{Name: m.Name}, cur); err != nil {
				return err
			}
		} else {
			return err
		}
	}
	annotations := map[string]string{wellknown.CAPIClusterAnnotation: capi.Namespace + "/" + capi.Name}
	if m.KeepWorkloads {
		annotations[wellknown.KeepWorkloadsAnnotation] = "true"
	}
	upToDate := cur.Spec.Provider == m.Provider && cur.Spec.Region == m.Region && slices.Equal(cur.Spec.Zones, m.Zones) &&
		(cur.Annotations[wellknown.KeepWorkloadsAnnotation] == "true") == m.KeepWorkloads
	for k, v := range m.Labels {
		upToDate = upToDate && cur.Labels[k] == v
	}
	for k, v := range annotations {
		upToDate = upToDate && cur.Annotations[k] == v
	}
	if upToDate {
		return nil
	}
	spec := map[string]any{}
	if m.Provider != "" {
		spec["provider"] = m.Provider
	}
	if m.Region != "" {
		spec["region"] = m.Region
	}
	if len(m.Zones) > 0 {
		spec["zones"] = slices.Clone(m.Zones)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1alpha1.GroupVersion.String(), "kind": "Cluster",
		"metadata": map[string]any{"name": m.Name, "labels": toAny(m.Labels), "annotations": toAny(annotations)},
		"spec":     spec,
	}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("write the labels and location of member %s: %w", m.Name, err)
	}
	return nil
}

// unjoin unjoins the member, with the member's admin config to remove what join made there
// when there is one.
func (r *Reconciler) unjoin(ctx context.Context, capi *clusterv1beta2.Cluster, name string, member *rest.Config, keep bool) error {
	timeout := r.UnjoinTimeout
	if timeout <= 0 {
		timeout = DefaultUnjoinTimeout
	}
	_, err := join.Unjoin(ctx, join.UnjoinOptions{Name: name, Host: r.Host, Member: member, Timeout: timeout, KeepWorkloads: keep})
	if err == nil && capi == nil {
		ctrl.LoggerFrom(ctx).Info("Unjoined the member of a Cluster API cluster that is gone", "member", name)
	}
	return err
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetupWithManager registers the controller when Cluster API's Cluster kind is served by the
// host, and reports whether it did.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) (bool, error) {
	gvk := clusterv1beta2.GroupVersion.WithKind("Cluster")
	if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			mgr.GetLogger().Info("Cluster API is not installed on the host: Cluster API clusters are not joined", "kind", gvk.String())
			return false, nil
		}
		return false, fmt.Errorf("look for Cluster API's Cluster kind: %w", err)
	}
	if !mgr.GetScheme().Recognizes(gvk) {
		if err := clusterv1beta2.AddToScheme(mgr.GetScheme()); err != nil {
			return false, err
		}
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.Host == nil {
		r.Host = mgr.GetConfig()
	}
	if r.Host == nil {
		return false, errors.New("cluster-api join: no host REST config")
	}
	err := ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		For(&clusterv1beta2.Cluster{}).
		// A member whose Cluster API Cluster went while the manager was down is unjoined when
		// the manager starts; one deleted by hand while still labelled is joined again.
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			ns, name, ok := splitKey(o.GetAnnotations()[wellknown.CAPIClusterAnnotation])
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
		}), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[wellknown.OriginLabel] == wellknown.OriginClusterAPI
		}))).
		Complete(r)
	return err == nil, err
}

func splitKey(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '/' {
			return s[:i], s[i+1:], i > 0 && i < len(s)-1
		}
	}
	return "", "", false
}
