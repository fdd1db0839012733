// Package clustertaint is the ClusterTaintPolicy controller: it keeps each Cluster's taints
// in line with the ClusterTaintPolicies that target it, as internal/clustertaint decides
// from the Cluster's labels, fields, conditions and taints.
//
// It reconciles Clusters: when their conditions, labels or spec change, and when a policy
// that targets them is created or changed. Taints are written with a patch that carries the
// Cluster's resourceVersion, so that a concurrent change by the cluster controller (its
// not-ready and unreachable taints) is never overwritten: the patch fails and the Cluster is
// evaluated again from what the other writer left. Taints no policy names are never touched.
// Deleting a policy, or a Cluster leaving its targetClusters, leaves the taints as they are.
//
// Each change is an event on the Cluster and one on the policy.
package clustertaint

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
	"github.com/flotilla-io/flotilla/internal/clustertaint"
)

const (
	// ControllerName names the controller, its logger and its events.
	ControllerName = "cluster-taint-policy"
	// DefaultWorkers is how many Clusters are reconciled at once.
	DefaultWorkers = 2
)

// Reconciler reconciles Clusters against the ClusterTaintPolicies. SetupWithManager fills
// the dependencies left unset from the manager.
type Reconciler struct {
	// Client reads Clusters and policies from the manager's cache and patches Clusters.
	Client client.Client
	// Recorder records events on Clusters and policies.
	Recorder events.EventRecorder
	// Clock dates the taints the policies add.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=policy.karmada.io,resources=clustertaintpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile evaluates the policies on one Cluster and patches its taints when they change.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	policies, err := r.livePolicies(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	res := clustertaint.Evaluate(cluster, policies, metav1.NewTime(r.Clock.Now()))
	r.reportInvalid(ctx, policies, res.Errors)
	if !res.Changed() {
		return ctrl.Result{}, nil
	}
	if err := r.patchTaints(ctx, cluster, res.Taints); err != nil {
		return ctrl.Result{}, err
	}
	r.recordChanges(ctx, cluster, policies, res.Changes)
	return ctrl.Result{}, nil
}

// livePolicies lists the policies that are not being deleted.
func (r *Reconciler) livePolicies(ctx context.Context) ([]policyv1alpha1.ClusterTaintPolicy, error) {
	list := &policyv1alpha1.ClusterTaintPolicyList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list ClusterTaintPolicies: %w", err)
	}
	return slices.DeleteFunc(list.Items, func(p policyv1alpha1.ClusterTaintPolicy) bool {
		return !p.DeletionTimestamp.IsZero()
	}), nil
}

// patchTaints writes the taints in one merge patch that carries the resourceVersion the
// taints were computed from: if anyone changed the Cluster since, the patch fails with a
// conflict and the Cluster is reconciled again.
func (r *Reconciler) patchTaints(ctx context.Context, cluster *clusterv1alpha1.Cluster, taints []corev1.Taint) error {
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cluster.Spec.Taints = taints
	if err := r.Client.Patch(ctx, cluster, patch, client.FieldOwner(ControllerName)); err != nil {
		return fmt.Errorf("patch the taints of Cluster %s: %w", cluster.Name, err)
	}
	return nil
}

// recordChanges logs each change and records it as an event on the Cluster and one on the
// policy.
func (r *Reconciler) recordChanges(ctx context.Context, cluster *clusterv1alpha1.Cluster, policies []policyv1alpha1.ClusterTaintPolicy, changes []clustertaint.Change) {
	log := ctrl.LoggerFrom(ctx)
	for _, c := range changes {
		reason, toFrom := policyv1alpha1.EventReasonClusterTaintAdded, "to"
		if c.Action == clustertaint.Removed {
			reason, toFrom = policyv1alpha1.EventReasonClusterTaintRemoved, "from"
		}
		log.Info("Changed a taint by policy", "ClusterTaintPolicy", c.Policy, "action", c.Action,
			"taint", clustertaint.TaintString(c.Taint), "because", c.Because)
		p := findPolicy(policies, c.Policy)
		if p == nil { // Evaluate only reports the policies it was given
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, reason, "Taint", "%s", c.String())
			continue
		}
		r.Recorder.Eventf(cluster, p, corev1.EventTypeNormal, reason, "Taint", "%s", c.String())
		r.Recorder.Eventf(p, cluster, corev1.EventTypeNormal, reason, "Taint", "%s taint %s %s Cluster %s because %s",
			c.Action, clustertaint.TaintString(c.Taint), toFrom, cluster.Name, c.Because)
	}
}

// reportInvalid records a warning on each policy that was skipped. The note does not name
// the Cluster, so that the same warning from every Cluster is one event series.
func (r *Reconciler) reportInvalid(ctx context.Context, policies []policyv1alpha1.ClusterTaintPolicy, errs []*clustertaint.PolicyError) {
	for _, e := range errs {
		ctrl.LoggerFrom(ctx).Info("Skipped a ClusterTaintPolicy", "ClusterTaintPolicy", e.Policy, "error", e.Err.Error())
		if p := findPolicy(policies, e.Policy); p != nil {
			r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, policyv1alpha1.EventReasonInvalidTargetClusters, "Evaluate",
				"The policy is skipped until fixed: %v", e.Err)
		}
	}
}

func findPolicy(policies []policyv1alpha1.ClusterTaintPolicy, name string) *policyv1alpha1.ClusterTaintPolicy {
	for i := range policies {
		if policies[i].Name == name {
			return &policies[i]
		}
	}
	return nil
}

// SetupWithManager registers the controller with mgr. workers <= 0 takes DefaultWorkers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if workers <= 0 {
		workers = DefaultWorkers
	}
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(inputsChanged())).
		Watches(&policyv1alpha1.ClusterTaintPolicy{}, handler.EnqueueRequestsFromMapFunc(r.targetedClusters)).
		Complete(r)
}

// inputsChanged passes Cluster creations and the updates that can change what the policies
// decide: the spec (taints, provider, region, zones: the generation), the labels, and the
// type or status of a condition. Heartbeats and messages do not pass; deletions neither
// (there is nothing left to taint).
func inputsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
			n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
			if !ok1 || !ok2 {
				return true
			}
			return o.Generation != n.Generation ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				!slices.Equal(conditionStatuses(o.Status.Conditions), conditionStatuses(n.Status.Conditions))
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

func conditionStatuses(conds []metav1.Condition) []string {
	out := make([]string, 0, len(conds))
	for _, c := range conds {
		out = append(out, c.Type+"="+string(c.Status))
	}
	slices.Sort(out)
	return out
}

// targetedClusters maps a policy to the Clusters its targetClusters select. A policy whose
// targetClusters cannot be evaluated maps to every Cluster, whose reconciles report it.
func (r *Reconciler) targetedClusters(ctx context.Context, o client.Object) []reconcile.Request {
	p, ok := o.(*policyv1alpha1.ClusterTaintPolicy)
	if !ok {
		return nil
	}
	m, err := clusteraffinity.Compile(p.Spec.TargetClusters)
	if err != nil {
		m = nil
	}
	clusters := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list the Clusters a ClusterTaintPolicy targets", "ClusterTaintPolicy", p.Name)
		return nil
	}
	out := make([]reconcile.Request, 0, len(clusters.Items))
	for i := range clusters.Items {
		if m == nil || m.Matches(&clusters.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: clusters.Items[i].Name}})
		}
	}
	return out
}
