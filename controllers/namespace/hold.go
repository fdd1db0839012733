// Package namespace keeps template namespaces inert on the host.
//
// A namespace labelled flotilla.io/propagation=enabled holds templates: its workloads run
// only on members. The host's own controllers still see them, so HoldReconciler keeps a
// ValidatingAdmissionPolicy and its binding in place that deny, in those namespaces, what
// host controllers would make from templates: Pods, ReplicaSets owned by Deployments, Jobs
// owned by CronJobs, and PersistentVolumeClaims made by the StatefulSet controller. No
// webhook server or certificate is involved. The objects are applied at start-up and put
// back whenever someone changes or deletes them.
//
// Opted-in namespaces reach members with the first object propagated into them (the
// execution controller creates the namespace in the member). Removing the label stops
// propagation: the detector unbinds the namespace's templates and keeps their member objects.
package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// HoldPolicyName names the ValidatingAdmissionPolicy and its binding.
const HoldPolicyName = "flotilla-template-hold"

// HoldMessage is what a denied request says.
var HoldMessage = fmt.Sprintf("namespace is labelled %s=%s: its workloads are Flotilla templates that run only on member clusters, so the host does not create %%s for them",
	wellknown.PropagationLabel, wellknown.PropagationEnabled)

// statefulSetControllerUsers are the identities the StatefulSet controller creates PVCs as:
// its own service account when kube-controller-manager uses per-controller credentials, the
// manager itself otherwise.
var statefulSetControllerUsers = []string{
	"system:serviceaccount:kube-system:statefulset-controller",
	"system:kube-controller-manager",
}

// HoldReconciler keeps the host hold in place.
type HoldReconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;list;watch;create;update;patch

// Reconcile applies the policy and binding as they should be.
func (r *HoldReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	opts := []client.ApplyOption{client.FieldOwner(wellknown.FieldManager), client.ForceOwnership}
	if err := r.Client.Apply(ctx, HoldPolicy(), opts...); err != nil {
		return ctrl.Result{}, fmt.Errorf("applying ValidatingAdmissionPolicy %s: %w", HoldPolicyName, err)
	}
	applyErr := r.Client.Apply(ctx, HoldBinding(), opts...)
	if applyErr != nil && !apierrors.IsInvalid(applyErr) {
		return ctrl.Result{}, fmt.Errorf("applying ValidatingAdmissionPolicyBinding %s: %w", HoldPolicyName, applyErr)
	}
	// Server-side apply merges a set (validationActions) and a map (matchLabels) with what
	// other managers put there, so an edit that added to them survives the apply, or makes it
	// invalid ([Warn, Deny]). Those fields are replaced whole.
	if err := r.replaceBindingSets(ctx); err != nil {
		return ctrl.Result{}, errors.Join(applyErr, err)
	}
	return ctrl.Result{}, nil
}

// replaceBindingSets puts the binding's validation actions and namespace selector back to
// exactly what the hold needs, with an update, when they differ.
func (r *HoldReconciler) replaceBindingSets(ctx context.Context) error {
	want, err := typedHoldBinding()
	if err != nil {
		return err
	}
	cur := &admissionv1.ValidatingAdmissionPolicyBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: HoldPolicyName}, cur); err != nil {
		return fmt.Errorf("reading ValidatingAdmissionPolicyBinding %s: %w", HoldPolicyName, err)
	}
	var curSelector *metav1.LabelSelector
	if cur.Spec.MatchResources != nil {
		curSelector = cur.Spec.MatchResources.NamespaceSelector
	}
	if equality.Semantic.DeepEqual(cur.Spec.ValidationActions, want.Spec.ValidationActions) &&
		equality.Semantic.DeepEqual(curSelector, want.Spec.MatchResources.NamespaceSelector) {
		return nil
	}
	cur.Spec.ValidationActions = want.Spec.ValidationActions
	if cur.Spec.MatchResources == nil {
		cur.Spec.MatchResources = &admissionv1.MatchResources{}
	}
	cur.Spec.MatchResources.NamespaceSelector = want.Spec.MatchResources.NamespaceSelector
	if err := r.Client.Update(ctx, cur, client.FieldOwner(wellknown.FieldManager)); err != nil {
		return fmt.Errorf("restoring ValidatingAdmissionPolicyBinding %s: %w", HoldPolicyName, err)
	}
	ctrl.LoggerFrom(ctx).Info("Restored the host hold's validation actions and namespace selector after an edit")
	return nil
}

// typedHoldBinding is HoldBinding as a typed object.
func typedHoldBinding() (*admissionv1.ValidatingAdmissionPolicyBinding, error) {
	raw, err := json.Marshal(HoldBinding())
	if err != nil {
		return nil, err
	}
	out := &admissionv1.ValidatingAdmissionPolicyBinding{}
	return out, json.Unmarshal(raw, out)
}

// HoldPolicy is the ValidatingAdmissionPolicy of the host hold.
func HoldPolicy() *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	create := admissionv1.OperationType(admissionv1.Create)
	rule := func(group, resource string) *admissionv1ac.NamedRuleWithOperationsApplyConfiguration {
		return admissionv1ac.NamedRuleWithOperations().
			WithOperations(create).
			WithAPIGroups(group).WithAPIVersions("*").WithResources(resource)
	}
	users := "["
	for i, u := range statefulSetControllerUsers {
		if i > 0 {
			users += ", "
		}
		users += "'" + u + "'"
	}
	users += "]"
	return admissionv1ac.ValidatingAdmissionPolicy(HoldPolicyName).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "flotilla"}).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicySpec().
			WithFailurePolicy(admissionv1.Fail).
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
				rule("", "pods"), rule("", "persistentvolumeclaims"), rule("apps", "replicasets"), rule("batch", "jobs"))).
			WithValidations(
				admissionv1ac.Validation().
					WithExpression("object.kind != 'Pod'").
					WithMessage(fmt.Sprintf(HoldMessage, "Pods")),
				admissionv1ac.Validation().
					WithExpression("object.kind != 'ReplicaSet' || !has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(o, o.kind == 'Deployment')").
					WithMessage(fmt.Sprintf(HoldMessage, "ReplicaSets of Deployments")),
				admissionv1ac.Validation().
					WithExpression("object.kind != 'Job' || !has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(o, o.kind == 'CronJob')").
					WithMessage(fmt.Sprintf(HoldMessage, "Jobs of CronJobs")),
				admissionv1ac.Validation().
					WithExpression("object.kind != 'PersistentVolumeClaim' || !(request.userInfo.username in "+users+")").
					WithMessage(fmt.Sprintf(HoldMessage, "PersistentVolumeClaims of StatefulSets")),
			))
}

// HoldBinding binds the policy to opted-in namespaces, never to system ones.
func HoldBinding() *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(HoldPolicyName).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "flotilla"}).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(HoldPolicyName).
			WithValidationActions(admissionv1.Deny).
			WithMatchResources(admissionv1ac.MatchResources().WithNamespaceSelector(
				metav1ac.LabelSelector().
					WithMatchLabels(map[string]string{wellknown.PropagationLabel: wellknown.PropagationEnabled}).
					WithMatchExpressions(metav1ac.LabelSelectorRequirement().
						WithKey("kubernetes.io/metadata.name").
						WithOperator(metav1.LabelSelectorOpNotIn).
						WithValues("kube-system", "kube-public", "kube-node-lease", wellknown.SystemNamespace)))))
}

// SetupWithManager applies the hold at start-up and again whenever its objects change.
func (r *HoldReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ours := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == HoldPolicyName }))
	toSingleton := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: HoldPolicyName}}}
	})
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: HoldPolicyName}}}
	return ctrl.NewControllerManagedBy(mgr).Named("template-hold").
		For(&admissionv1.ValidatingAdmissionPolicy{}, ours).
		Watches(&admissionv1.ValidatingAdmissionPolicyBinding{}, toSingleton, ours).
		WatchesRawSource(source.Channel(start, toSingleton)).
		Complete(r)
}
