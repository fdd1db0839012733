// Package rollout runs progressive rollouts (rollouts.flotilla.io): for each ResourceBinding
// whose template a RolloutPolicy or ClusterRolloutPolicy selects, it keeps a Rollout (same
// namespace and name, owned by the binding) whose status says which revision each cluster
// may run; the binding controller renders each cluster's Work from it (Gate). The decisions
// are internal/rollout's; this reconciler reads, plans, and writes the Rollout once.
package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/resourceselector"
	planner "github.com/flotilla-io/flotilla/internal/rollout"
)

// ControllerName names the controller and its events' reporter.
const ControllerName = "rollout-controller"

// Pruner removes the fields the host filled in from a template.
type Pruner interface {
	Prune(obj *unstructured.Unstructured) *unstructured.Unstructured
}

// Reconciler keeps one Rollout per selected ResourceBinding.
type Reconciler struct {
	Client      client.Client
	APIReader   client.Reader
	Recorder    events.EventRecorder
	Interpreter Pruner
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// +kubebuilder:rbac:groups=rollouts.flotilla.io,resources=rolloutpolicies;clusterrolloutpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=rollouts.flotilla.io,resources=rollouts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rollouts.flotilla.io,resources=rollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile plans the rollout of one ResourceBinding's template.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rb := &workv1alpha2.ResourceBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil || rb.DeletionTimestamp != nil {
		// A Rollout goes with its binding (owner reference).
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ro := &rolloutsv1alpha1.Rollout{}
	exists := true
	if err := r.Client.Get(ctx, req.NamespacedName, ro); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		exists = false
	}
	candidates, err := r.candidates(ctx, &rb.Spec.Resource)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(candidates) == 0 && !exists {
		return ctrl.Result{}, nil // the template is not read for bindings no policy may select
	}
	tmpl, err := r.template(ctx, &rb.Spec.Resource)
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	policy, conflict := choosePolicy(candidates, tmpl)
	if policy == nil {
		// No policy rolls the template out any more: every cluster takes it as it is.
		if exists {
			return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, ro, client.Preconditions{UID: ptr.To(ro.UID)}))
		}
		return ctrl.Result{}, nil
	}
	in, err := r.input(ctx, rb, tmpl, ro, policy)
	if err != nil {
		return ctrl.Result{}, err
	}
	res := planner.Plan(in)
	status := r.status(ro, tmpl, policy, conflict, res)
	if err := r.write(ctx, rb, ro, exists, status); err != nil {
		return ctrl.Result{}, err
	}
	r.tell(ro, tmpl, policy, res)
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
}

// template reads the binding's template from the host.
func (r *Reconciler) template(ctx context.Context, ref *workv1alpha2.ObjectReference) (*unstructured.Unstructured, error) {
	tmpl := &unstructured.Unstructured{}
	tmpl.SetAPIVersion(ref.APIVersion)
	tmpl.SetKind(ref.Kind)
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, tmpl)
	return tmpl, err
}

// policy is a rollout policy of either scope.
type policy struct {
	kind, namespace, name string
	spec                  rolloutsv1alpha1.RolloutPolicySpec
	precision             resourceselector.Precision
}

func (p *policy) String() string { return p.kind + "/" + p.name }

// candidates returns the rollout policies of the template's namespace and of the cluster
// that may select it by apiVersion, kind and name (labels are looked at in choosePolicy).
func (r *Reconciler) candidates(ctx context.Context, ref *workv1alpha2.ObjectReference) ([]*policy, error) {
	var all []*policy
	nl := &rolloutsv1alpha1.RolloutPolicyList{}
	if err := r.Client.List(ctx, nl, client.InNamespace(ref.Namespace)); err != nil {
		return nil, err
	}
	for i := range nl.Items {
		all = append(all, &policy{kind: "RolloutPolicy", namespace: nl.Items[i].Namespace, name: nl.Items[i].Name, spec: nl.Items[i].Spec})
	}
	cl := &rolloutsv1alpha1.ClusterRolloutPolicyList{}
	if err := r.Client.List(ctx, cl); err != nil {
		return nil, err
	}
	for i := range cl.Items {
		all = append(all, &policy{kind: "ClusterRolloutPolicy", name: cl.Items[i].Name, spec: cl.Items[i].Spec})
	}
	return slices.DeleteFunc(all, func(p *policy) bool {
		return !slices.ContainsFunc(p.spec.ResourceSelectors, func(s policyv1alpha1.ResourceSelector) bool {
			return s.APIVersion == ref.APIVersion && s.Kind == ref.Kind && (s.Namespace == "" || s.Namespace == ref.Namespace) &&
				(s.Name == "" || s.Name == ref.Name)
		})
	}), nil
}

// choosePolicy picks the policy in force for a template: highest priority, then a
// RolloutPolicy over a ClusterRolloutPolicy, then the more precise selector, then name order.
// conflict names the other policies that select the template.
func choosePolicy(all []*policy, tmpl *unstructured.Unstructured) (*policy, []string) {
	var matching []*policy
	for _, p := range all {
		prec, err := resourceselector.BestMatch(p.spec.ResourceSelectors, tmpl)
		if err != nil || prec == resourceselector.NoMatch {
			continue
		}
		p.precision = prec
		matching = append(matching, p)
	}
	if len(matching) == 0 {
		return nil, nil
	}
	slices.SortFunc(matching, func(a, b *policy) int {
		if pa, pb := ptr.Deref(a.spec.Priority, 0), ptr.Deref(b.spec.Priority, 0); pa != pb {
			return int(pb - pa)
		}
		if a.kind != b.kind {
			if a.kind == "RolloutPolicy" {
				return -1
			}
			return 1
		}
		if a.precision != b.precision {
			return int(b.precision - a.precision)
		}
		return strings.Compare(a.name, b.name)
	})
	var others []string
	for _, p := range matching[1:] {
		others = append(others, p.String())
	}
	return matching[0], others
}

// input gathers what the planner decides from: every scheduled cluster's Work.
func (r *Reconciler) input(ctx context.Context, rb *workv1alpha2.ResourceBinding, tmpl *unstructured.Unstructured,
	ro *rolloutsv1alpha1.Rollout, p *policy) (planner.Input, error) {
	works, err := bindings.WorksByCluster(ctx, r.Client, rb)
	if err != nil {
		return planner.Input{}, err
	}
	in := planner.Input{Now: r.now(), Spec: p.spec, Control: ro.Spec, Prev: ro.Status,
		Revision: planner.Revision(r.Interpreter.Prune(tmpl))}
	for _, tc := range bindings.Targets(&rb.Spec) {
		c := planner.Cluster{Name: tc.Name}
		cluster := &clusterv1alpha1.Cluster{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: tc.Name}, cluster); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return planner.Input{}, err
		}
		c.Labels = cluster.Labels
		if w := works[tc.Name]; w != nil {
			fromWork(&c, w)
		}
		in.TotalReplicas += c.Replicas
		in.Clusters = append(in.Clusters, c)
	}
	return in, nil
}

// fromWork reads what a cluster's Work carries and reports (numbers decoded as int64 where
// they are whole, as the unstructured helpers want them).
func fromWork(c *planner.Cluster, w *workv1alpha1.Work) {
	c.WorkRevision = w.Labels[rolloutsv1alpha1.RevisionLabel]
	cond := meta.FindStatusCondition(w.Status.Conditions, wellknown.WorkConditionApplied)
	c.Applied = cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == w.Generation
	desired := map[int]int64{}
	for i, m := range w.Spec.Workload.Manifests {
		var obj map[string]any
		if utiljson.Unmarshal(m.Raw, &obj) != nil {
			continue
		}
		if n, found, _ := unstructured.NestedInt64(obj, "spec", "replicas"); found {
			desired[i] = n
			c.Replicas += int32(n)
		} else if _, isWorkload, _ := unstructured.NestedMap(obj, "spec", "template"); isWorkload {
			desired[i] = 1
			c.Replicas++
		}
	}
	health := ""
	settling := false
	for _, ms := range w.Status.ManifestStatuses {
		switch {
		case ms.Health == workv1alpha1.ResourceUnhealthy:
			health = string(workv1alpha1.ResourceUnhealthy)
		case ms.Health == workv1alpha1.ResourceHealthy && health == "":
			health = string(workv1alpha1.ResourceHealthy)
		case ms.Health != workv1alpha1.ResourceHealthy && health != string(workv1alpha1.ResourceUnhealthy):
			health = string(workv1alpha1.ResourceUnknownHealth)
		}
		var st map[string]any
		if ms.Status == nil || utiljson.Unmarshal(ms.Status.Raw, &st) != nil {
			continue
		}
		if g, found, _ := unstructured.NestedInt64(st, "observedGeneration"); found && g > c.ObservedGeneration {
			c.ObservedGeneration = g
		}
		if want, ok := desired[ms.Identifier.Ordinal]; ok {
			avail, _, _ := unstructured.NestedInt64(st, "availableReplicas")
			c.Unavailable += int32(max(0, want-avail))
			// A rolling update is over once no replicas beyond spec are left (the old ones
			// still count as available while they go, and the new ones may not all be).
			for _, f := range []string{"replicas", "updatedReplicas"} {
				if n, found, _ := unstructured.NestedInt64(st, f); found && n != want {
					settling = true
				}
			}
		}
	}
	if settling && health == string(workv1alpha1.ResourceHealthy) {
		health = "Progressing"
	}
	c.Health = health
}

// status completes the planner's status with what is the controller's to fill in.
func (r *Reconciler) status(ro *rolloutsv1alpha1.Rollout, tmpl *unstructured.Unstructured, p *policy, conflict []string,
	res planner.Result) rolloutsv1alpha1.RolloutStatus {
	st := res.Status
	st.ObservedGeneration = ro.Generation
	st.Policy = p.String()
	st.Resource = rolloutsv1alpha1.ResourceRef{APIVersion: tmpl.GetAPIVersion(), Kind: tmpl.GetKind(), Namespace: tmpl.GetNamespace(), Name: tmpl.GetName()}
	st.StableTemplate = ro.Status.StableTemplate
	if res.Promoted || st.StableTemplate == nil && st.StableRevision == st.Revision {
		body := planner.Body(r.Interpreter.Prune(tmpl))
		if raw, err := json.Marshal(body); err == nil {
			st.StableTemplate = &runtime.RawExtension{Raw: raw}
		}
	}
	c := metav1.Condition{Type: rolloutsv1alpha1.ConditionPolicyConflict, Status: metav1.ConditionFalse,
		Reason: rolloutsv1alpha1.ReasonSinglePolicy, Message: "One rollout policy selects the template"}
	if len(conflict) > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, rolloutsv1alpha1.ReasonOverlappingPolicies
		c.Message = fmt.Sprintf("%s is in force (priority, then namespaced over cluster-scoped, then selector precision, then name); also selecting the template: %s",
			p, strings.Join(conflict, ", "))
	}
	meta.SetStatusCondition(&st.Conditions, c)
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = ro.Generation
	}
	// Conditions' transition times stay as they were when nothing changed.
	for i := range st.Conditions {
		if old := meta.FindStatusCondition(ro.Status.Conditions, st.Conditions[i].Type); old != nil && old.Status == st.Conditions[i].Status {
			st.Conditions[i].LastTransitionTime = old.LastTransitionTime
		}
	}
	return st
}

// write creates the Rollout, or updates its status when it changed.
func (r *Reconciler) write(ctx context.Context, rb *workv1alpha2.ResourceBinding, ro *rolloutsv1alpha1.Rollout, exists bool, status rolloutsv1alpha1.RolloutStatus) error {
	if !exists {
		ro.Namespace, ro.Name = rb.Namespace, rb.Name
		ro.OwnerReferences = []metav1.OwnerReference{{APIVersion: workv1alpha2.GroupVersion.String(), Kind: "ResourceBinding",
			Name: rb.Name, UID: rb.UID}}
		if err := r.Client.Create(ctx, ro); err != nil {
			return err
		}
	} else if equality.Semantic.DeepEqual(ro.Status, status) {
		return nil
	}
	ro.Status = status
	return r.Client.Status().Update(ctx, ro)
}

// tell emits the planner's events on the Rollout (halts and rollbacks on the template too)
// and records the metrics.
func (r *Reconciler) tell(ro *rolloutsv1alpha1.Rollout, tmpl *unstructured.Unstructured, p *policy, res planner.Result) {
	for _, e := range res.Events {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(ro, nil, typ, e.Reason, "Rollout", "%s", e.Message)
		if e.Reason == rolloutsv1alpha1.EventHalted || e.Reason == rolloutsv1alpha1.EventRolledBack {
			r.Recorder.Eventf(tmpl, nil, typ, e.Reason, "Rollout", "%s", e.Message)
		}
	}
	for _, s := range res.Completed {
		stageDuration.WithLabelValues(s.Stage).Observe(s.Duration.Seconds())
	}
	if res.Halted {
		halts.WithLabelValues(tmpl.GetKind()).Inc()
	}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
