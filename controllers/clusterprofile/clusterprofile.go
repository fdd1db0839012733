// Package clusterprofile is the ClusterProfile controller: it publishes every member cluster
// as a ClusterProfile (multicluster.x-k8s.io/v1alpha1, SIG-Multicluster's Cluster Inventory
// API, KEP-4322), so that tools written for that API (MultiKueue, multicluster-runtime,
// Argo CD, Headlamp...) see Flotilla's fleet.
//
// One profile per Cluster, of the same name, in one namespace (--cluster-profile-namespace,
// wellknown.ClusterInventoryNamespace by default), labelled x-k8s.io/cluster-manager=flotilla
// and owned by its Cluster. What it says is Desired's: the conditions ControlPlaneHealthy
// (the Cluster's Ready condition, which the cluster controller keeps from its probes of the
// member's /readyz) and Joined, the Kubernetes version, properties (location, node count,
// CPU and memory allocatable and available) and the access providers through which a consumer
// reaches the member with its own credentials (docs/cluster-inventory.md).
//
// Each reconcile computes the profile (desired), applies its metadata and spec and then its
// status with server-side apply when they differ from what the cache holds (write), and
// deletes the profile of a Cluster that is gone or being deleted, and profiles of this
// manager whose Cluster is gone (prune). The first write of a profile, a change of its
// ControlPlaneHealthy status and a failed write are events on the Cluster (report).
package clusterprofile

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/clusterinventory/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

const (
	// ControllerName names the controller, its logger and its events.
	ControllerName = "cluster-profile"
	// FieldOwner is the field manager of the profiles' server-side applies.
	FieldOwner = "flotilla-cluster-profile"
	// DefaultAccessProvider is the name the access providers are published under by default.
	DefaultAccessProvider = "flotilla"
	// DefaultWorkers is how many Clusters are reconciled at once.
	DefaultWorkers = 2

	// EventReasonPublished: a member's ClusterProfile was created.
	EventReasonPublished = "ClusterProfilePublished"
	// EventReasonHealthChanged: the ControlPlaneHealthy status of a profile changed.
	EventReasonHealthChanged = "ClusterProfileHealthChanged"
	// EventReasonFailed: the profile could not be written.
	EventReasonFailed = "ClusterProfileFailed"
)

// Options configure the controller.
type Options struct {
	// Disabled turns the controller off: no profile is written or deleted.
	Disabled bool
	// Namespace holds the profiles; "" is wellknown.ClusterInventoryNamespace.
	Namespace string
	// AccessProviders are the names the access providers are published under; nil is
	// DefaultAccessProvider alone.
	AccessProviders []string
	// Workers is how many Clusters are reconciled at once; 0 is DefaultWorkers.
	Workers int
}

// BindFlags registers the options as command-line flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.BoolFunc("cluster-profiles", "Publish every member cluster as a ClusterProfile (multicluster.x-k8s.io, KEP-4322); default true, --cluster-profiles=false turns it off.", func(v string) error {
		switch v {
		case "true":
			o.Disabled = false
		case "false":
			o.Disabled = true
		default:
			return fmt.Errorf("want true or false, got %q", v)
		}
		return nil
	})
	fs.StringVar(&o.Namespace, "cluster-profile-namespace", wellknown.ClusterInventoryNamespace,
		"Namespace of the ClusterProfiles. The manager creates "+wellknown.ClusterInventoryNamespace+" when missing; any other must exist (its guard allows no other namespace).")
	fs.Func("cluster-profile-access-providers", "Comma-separated names the ClusterProfiles' access providers are published under, each matching a provider in consumers' configuration (default \""+DefaultAccessProvider+"\"; see docs/cluster-inventory.md).", func(v string) error {
		o.AccessProviders = nil
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				o.AccessProviders = append(o.AccessProviders, n)
			}
		}
		return nil
	})
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = wellknown.ClusterInventoryNamespace
	}
	if o.AccessProviders == nil {
		o.AccessProviders = []string{DefaultAccessProvider}
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	return o
}

// Reconciler keeps the ClusterProfiles. SetupWithManager fills what is left unset.
type Reconciler struct {
	// Client reads Clusters and profiles from the manager's cache and writes profiles.
	Client client.Client
	// APIReader reads the members' credentials Secrets (for their CA) and the namespace
	// from the host apiserver: the cache holds no Secret data.
	APIReader client.Reader
	// Recorder records events on Clusters.
	Recorder events.EventRecorder
	// Options configure the controller.
	Options Options
}

// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles/status,verbs=get;patch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the profile of one Cluster in line with it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: req.Name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.prune(ctx, req.Name)
		}
		return ctrl.Result{}, err
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.prune(ctx, cluster.Name)
	}
	desired, err := r.desired(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	current := &inventoryv1alpha1.ClusterProfile{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), current); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		current = nil
	}
	if current != nil && !ownedBy(current, cluster) && current.Labels[wellknown.InventoryManagedByLabel] != wellknown.InventoryManagedBy {
		// Another cluster manager's profile of the same name: left alone.
		err := fmt.Errorf("ClusterProfile %s/%s exists and is not Flotilla's (cluster manager %q): left as it is", desired.Namespace, desired.Name, current.Spec.ClusterManager.Name)
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, EventReasonFailed, "Publish", "%v", err)
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if current != nil && !ownedBy(current, cluster) {
		// Flotilla's profile of an earlier Cluster of the same name (deleted and created again
		// while the manager was away): it has that Cluster as controller, so it is replaced.
		if err := r.Client.Delete(ctx, current, client.Preconditions{UID: &current.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete the ClusterProfile %s/%s of an earlier Cluster %s: %w", current.Namespace, current.Name, cluster.Name, err)
		}
		return ctrl.Result{}, nil // its deletion, watched, brings the Cluster back
	}
	if err := r.write(ctx, current, desired); err != nil {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, EventReasonFailed, "Publish", "Cannot write ClusterProfile %s/%s: %v", desired.Namespace, desired.Name, err)
		return ctrl.Result{}, err
	}
	r.report(ctx, cluster, current, desired)
	return ctrl.Result{}, nil
}

// desired computes the profile, with the CA of the member's apiserver from its Secret.
func (r *Reconciler) desired(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*inventoryv1alpha1.ClusterProfile, error) {
	var ca []byte
	if ref := cluster.Spec.SecretRef; ref != nil && cluster.Spec.APIEndpoint != "" && !cluster.Spec.InsecureSkipTLSVerification {
		secret := &corev1.Secret{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, secret)
		switch {
		case apierrors.IsNotFound(err):
			// Published without a CA; the cluster controller reports the missing Secret.
		case err != nil:
			return nil, fmt.Errorf("read the credentials Secret %s/%s of Cluster %s for its CA: %w", ref.Namespace, ref.Name, cluster.Name, err)
		default:
			ca = secret.Data[wellknown.SecretKeyCABundle]
		}
	}
	return Desired(Input{Cluster: cluster, Namespace: r.Options.Namespace, CABundle: ca, AccessProviders: r.Options.AccessProviders}), nil
}

// write applies the profile's metadata and spec, then its status, each only when it differs
// from current (nil: no profile yet).
func (r *Reconciler) write(ctx context.Context, current, desired *inventoryv1alpha1.ClusterProfile) error {
	if current == nil {
		if err := r.ensureNamespace(ctx); err != nil {
			return err
		}
	}
	if current == nil || !metaAndSpecApplied(current, desired) {
		u, err := toUnstructured(desired)
		if err != nil {
			return err
		}
		delete(u.Object, "status")
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return err
		}
	}
	if current != nil && equality.Semantic.DeepEqual(current.Status, desired.Status) {
		return nil
	}
	u, err := toUnstructured(desired)
	if err != nil {
		return err
	}
	st := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": desired.Name, "namespace": desired.Namespace},
		"status":   u.Object["status"],
	}}
	return r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(st), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// ensureNamespace creates the profiles' namespace when it does not exist. The guard lets the
// manager create wellknown.ClusterInventoryNamespace only: another namespace must exist.
func (r *Reconciler) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Name: r.Options.Namespace}, ns)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Options.Namespace,
		Labels: map[string]string{wellknown.InventoryManagedByLabel: wellknown.InventoryManagedBy}}}
	if err := r.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the ClusterProfiles' namespace %s does not exist and cannot be created (create it, or set --cluster-profile-namespace to one that exists): %w", r.Options.Namespace, err)
	}
	return nil
}

// prune deletes the profile of the named Cluster, if it is Flotilla's.
func (r *Reconciler) prune(ctx context.Context, name string) error {
	p := &inventoryv1alpha1.ClusterProfile{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Options.Namespace, Name: name}, p); err != nil {
		return client.IgnoreNotFound(err)
	}
	if p.Labels[wellknown.InventoryManagedByLabel] != wellknown.InventoryManagedBy || !p.DeletionTimestamp.IsZero() {
		return nil
	}
	err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("Deleted the ClusterProfile of a Cluster that is gone", "ClusterProfile", client.ObjectKeyFromObject(p))
	}
	return client.IgnoreNotFound(err)
}

// report records the first publication and changes of ControlPlaneHealthy as events.
func (r *Reconciler) report(ctx context.Context, cluster *clusterv1alpha1.Cluster, current, desired *inventoryv1alpha1.ClusterProfile) {
	healthy := meta.FindStatusCondition(desired.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
	if current == nil {
		ctrl.LoggerFrom(ctx).Info("Published the ClusterProfile", "ClusterProfile", client.ObjectKeyFromObject(desired))
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, EventReasonPublished, "Publish", "Published as ClusterProfile %s/%s (ControlPlaneHealthy %s)",
			desired.Namespace, desired.Name, healthy.Status)
		return
	}
	was := meta.FindStatusCondition(current.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
	if was == nil || was.Status != healthy.Status {
		typ := corev1.EventTypeNormal
		if healthy.Status != metav1.ConditionTrue {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(cluster, nil, typ, EventReasonHealthChanged, "Publish", "ClusterProfile %s/%s: ControlPlaneHealthy is %s (%s)",
			desired.Namespace, desired.Name, healthy.Status, healthy.Reason)
	}
}

// metaAndSpecApplied says whether current has desired's labels, owner and spec.
func metaAndSpecApplied(current, desired *inventoryv1alpha1.ClusterProfile) bool {
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			return false
		}
	}
	for _, want := range desired.OwnerReferences {
		found := false
		for _, have := range current.OwnerReferences {
			found = found || (have.UID == want.UID && have.Kind == want.Kind && have.Name == want.Name)
		}
		if !found {
			return false
		}
	}
	return equality.Semantic.DeepEqual(current.Spec, desired.Spec)
}

// clustersUsingSecret maps a Secret to the Clusters whose spec.secretRef names it.
func (r *Reconciler) clustersUsingSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	clusters := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list the Clusters that use a Secret", "Secret", client.ObjectKeyFromObject(secret))
		return nil
	}
	var out []reconcile.Request
	for _, c := range clusters.Items {
		if ref := c.Spec.SecretRef; ref != nil && ref.Namespace == secret.GetNamespace() && ref.Name == secret.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
		}
	}
	return out
}

func ownedBy(p *inventoryv1alpha1.ClusterProfile, cluster *clusterv1alpha1.Cluster) bool {
	for _, o := range p.OwnerReferences {
		if o.UID == cluster.UID {
			return true
		}
	}
	return false
}

func toUnstructured(p *inventoryv1alpha1.ClusterProfile) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return nil, fmt.Errorf("convert ClusterProfile %s/%s: %w", p.Namespace, p.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// SetupWithManager registers the controller with mgr, to run on the leader only. It does
// nothing when the controller is disabled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Options = r.Options.withDefaults()
	if r.Options.Disabled {
		return nil
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
	if len(r.Options.AccessProviders) == 0 || r.Options.Namespace == "" {
		return errors.New("cluster profiles: a namespace and at least one access provider name are needed")
	}
	ns := r.Options.Namespace
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers}).
		For(&clusterv1alpha1.Cluster{}).
		// A member's CA comes from its credentials Secret: a new one (join run again) is
		// published. The cache holds the Secrets' metadata only.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersUsingSecret)).
		// A profile changed or deleted by someone else is put back; one whose Cluster is gone
		// (the manager was down when it went) is pruned.
		Watches(&inventoryv1alpha1.ClusterProfile{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		}), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == ns && o.GetLabels()[wellknown.InventoryManagedByLabel] == wellknown.InventoryManagedBy
		}))).
		Complete(r)
}
