// Package namespace keeps template namespaces inert on the host.
//
// A namespace labelled flotilla.io/propagation=enabled holds templates: its workloads run
// only on members, and their status is the fleet's, written by Flotilla. The host's own
// controllers still see the templates, so HoldReconciler keeps admission policies in place
// (no webhook server or certificate is involved) that, in held namespaces:
//
//   - deny what host controllers would make from templates: Pods (from anyone), ReplicaSets
//     owned by Deployments, Jobs owned by CronJobs, and PersistentVolumeClaims and
//     ControllerRevisions created by a host controller;
//   - deny the host controllers' writes to templates: status (the fleet's status is written
//     there), scale (a host HPA scaling the template), finalizers they add (the cloud
//     service controller's load balancer finalizer comes before the load balancer), and
//     the volume binding of PersistentVolumeClaims (binder annotations, volumeName), which
//     comes before provisioning;
//   - set spec.managedBy on Jobs as they are created, where the host serves
//     MutatingAdmissionPolicy, so that the host's Job controller leaves them alone.
//
// Deletes are never matched (namespace deletion and garbage collection go on), nor are
// Namespaces, ResourceQuotas, Events and Leases. Host controllers are known by the identity
// they write as (HostControllers); with kube-controller-manager's
// --use-service-account-credentials=false they all share system:kube-controller-manager,
// which is why the rules above name what is denied and not only who.
//
// Two bindings select held namespaces: those labelled flotilla.io/propagation=enabled, and
// those labelled flotilla.io/held=true, which HeldReconciler puts on every opted-in namespace
// and never removes. Removing the propagation label therefore stops propagation but keeps
// the hold; removing flotilla.io/held as well is the user's confirmation that the host may
// run the templates.
//
// The namespaces Flotilla never propagates from (internal/systemnamespace: kube-*,
// flotilla-system, Karmada's, the execution namespaces) are never held, whatever their labels
// say: each policy's match condition leaves them out (a namespace selector cannot express a
// prefix), and HeldReconciler answers their opt-in with a Warning event, OptInRefused.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	"github.com/flotilla-io/flotilla/internal/applied"
	"github.com/flotilla-io/flotilla/internal/systemnamespace"
)

const (
	// HoldPolicyName names the ValidatingAdmissionPolicy, and its binding for namespaces
	// labelled flotilla.io/propagation=enabled.
	HoldPolicyName = "flotilla-template-hold"
	// KeptBindingName names the binding for namespaces labelled flotilla.io/held=true.
	KeptBindingName = "flotilla-template-hold-kept"
	// JobPolicyName names the MutatingAdmissionPolicy that sets spec.managedBy on Jobs, and
	// its binding for opted-in namespaces; JobKeptBindingName the one for held namespaces.
	JobPolicyName      = "flotilla-template-hold-jobs"
	JobKeptBindingName = "flotilla-template-hold-jobs-kept"
)

// HoldMessage is what a denied request says; %s names what is denied.
var HoldMessage = fmt.Sprintf("namespace holds Flotilla templates (labelled %s=%s or %s=%s): they run only on member clusters, so the host does not %%s",
	wellknown.PropagationLabel, wellknown.PropagationEnabled, wellknown.HeldLabel, wellknown.HeldTrue)

// DefaultHostControllers are the identities the hold denies writes to templates by: the
// controllers of kube-controller-manager (by their own service accounts, and shared as
// system:kube-controller-manager), of cloud-controller-manager, and of common load balancer
// and ingress controllers. The manager's --hold-controller flag adds more.
var DefaultHostControllers = []string{
	"system:kube-controller-manager",
	kubeSystemSA("deployment-controller"),
	kubeSystemSA("replicaset-controller"),
	kubeSystemSA("replication-controller"),
	kubeSystemSA("statefulset-controller"),
	kubeSystemSA("daemon-set-controller"),
	kubeSystemSA("job-controller"),
	kubeSystemSA("cronjob-controller"),
	kubeSystemSA("disruption-controller"),
	kubeSystemSA("horizontal-pod-autoscaler"),
	kubeSystemSA("persistent-volume-binder"),
	kubeSystemSA("persistent-volume-expander"),
	kubeSystemSA("pvc-protection-controller"),
	kubeSystemSA("ephemeral-volume-controller"),
	"system:cloud-controller-manager",
	kubeSystemSA("cloud-controller-manager"),
	kubeSystemSA("service-controller"),
	kubeSystemSA("aws-load-balancer-controller"),
	kubeSystemSA("traefik"),
	"system:serviceaccount:ingress-nginx:ingress-nginx",
	"system:serviceaccount:metallb-system:controller",
}

func kubeSystemSA(name string) string { return "system:serviceaccount:kube-system:" + name }

// ValidateHostControllers checks identities for use in the policy's expressions.
func ValidateHostControllers(ids []string) error {
	var errs []error
	for _, id := range ids {
		if id == "" || strings.ContainsAny(id, "\"'\\\n\r\t") {
			errs = append(errs, fmt.Errorf("host controller identity %q: must be a non-empty user name without quotes, backslashes or control characters", id))
		}
	}
	return errors.Join(errs...)
}

// HoldReconciler keeps the host hold in place.
type HoldReconciler struct {
	Client client.Client
	// Reader reads the hold's objects whole, managedFields included (the cache drops them),
	// to apply only what differs: a start with the hold in place writes nothing.
	// SetupWithManager sets it to the manager's API reader when nil.
	Reader client.Reader
	// HostControllers are the identities whose writes to templates are denied; empty means
	// DefaultHostControllers.
	HostControllers []string
	// Jobs applies the MutatingAdmissionPolicy for Jobs. SetupWithManager sets it when the
	// host serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36
	// and later); without it, held Jobs are kept from running by the validating policy
	// alone, and the host's Job controller retries them.
	Jobs bool
}

// The hold's policies and bindings: created (RBAC cannot limit create by name), then updated
// by name only, so the manager can change no other admission policy, the guard included
// (internal/hostguard; admission policies do not apply to admission policies).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings;mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=update;patch,resourceNames=flotilla-template-hold;flotilla-template-hold-kept
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=update;patch,resourceNames=flotilla-template-hold-jobs;flotilla-template-hold-jobs-kept

// Reconcile applies the policies and bindings as they should be.
func (r *HoldReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	opts := []client.ApplyOption{client.FieldOwner(wellknown.FieldManager), client.ForceOwnership}
	ids := r.HostControllers
	if len(ids) == 0 {
		ids = DefaultHostControllers
	}
	if err := r.apply(ctx, HoldPolicy(ids), opts...); err != nil {
		return ctrl.Result{}, fmt.Errorf("applying ValidatingAdmissionPolicy %s: %w", HoldPolicyName, err)
	}
	if r.Jobs {
		if err := r.apply(ctx, JobPolicy(), opts...); err != nil {
			return ctrl.Result{}, fmt.Errorf("applying MutatingAdmissionPolicy %s: %w", JobPolicyName, err)
		}
	}
	var errs []error
	for _, b := range holdBindings() {
		if err := r.apply(ctx, b.validating(), opts...); err != nil && !apierrors.IsInvalid(err) {
			errs = append(errs, fmt.Errorf("applying ValidatingAdmissionPolicyBinding %s: %w", b.name, err))
		}
		if r.Jobs {
			if err := r.apply(ctx, b.mutating(), opts...); err != nil {
				errs = append(errs, fmt.Errorf("applying MutatingAdmissionPolicyBinding %s: %w", b.jobName, err))
			}
		}
		// Server-side apply merges a set (validationActions) and a map (matchLabels) with what
		// other managers put there, so an edit that added to them survives the apply, or makes
		// it invalid ([Warn, Deny]). Those fields are replaced whole.
		if err := r.replaceSets(ctx, b); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// apply server-side applies one of the hold's objects, unless the object is already as
// applied: the fields the field manager owns in it hold exactly what the apply would write
// (applied.Unchanged; an edit by anyone else takes the fields it changed from the manager).
// The read costs the host less than an apply that changes nothing, and is no write.
func (r *HoldReconciler) apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if r.Reader != nil {
		if desired, err := applied.ToUnstructured(obj); err == nil {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(desired.GroupVersionKind())
			if err := r.Reader.Get(ctx, client.ObjectKey{Name: desired.GetName()}, live); err == nil &&
				applied.Unchanged(live, desired, wellknown.FieldManager) {
				return nil
			}
		}
	}
	return r.Client.Apply(ctx, obj, opts...)
}

// replaceSets puts a binding's validation actions and namespace selector back to exactly
// what the hold needs, with an update, when they differ.
func (r *HoldReconciler) replaceSets(ctx context.Context, b holdBinding) error {
	want := b.selector()
	cur := &admissionv1.ValidatingAdmissionPolicyBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: b.name}, cur); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // just created, not in the cache yet: its create event brings it back
		}
		return fmt.Errorf("reading ValidatingAdmissionPolicyBinding %s: %w", b.name, err)
	}
	actions := []admissionv1.ValidationAction{admissionv1.Deny}
	if cur.Spec.MatchResources == nil || !equality.Semantic.DeepEqual(cur.Spec.ValidationActions, actions) ||
		!equality.Semantic.DeepEqual(cur.Spec.MatchResources.NamespaceSelector, want) {
		cur.Spec.ValidationActions = actions
		if cur.Spec.MatchResources == nil {
			cur.Spec.MatchResources = &admissionv1.MatchResources{}
		}
		cur.Spec.MatchResources.NamespaceSelector = want
		if err := r.Client.Update(ctx, cur, client.FieldOwner(wellknown.FieldManager)); err != nil {
			return fmt.Errorf("restoring ValidatingAdmissionPolicyBinding %s: %w", b.name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Restored a hold binding's validation actions and namespace selector after an edit", "binding", b.name)
	}
	if !r.Jobs {
		return nil
	}
	mcur := &admissionv1.MutatingAdmissionPolicyBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: b.jobName}, mcur); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading MutatingAdmissionPolicyBinding %s: %w", b.jobName, err)
	}
	if mcur.Spec.MatchResources != nil && equality.Semantic.DeepEqual(mcur.Spec.MatchResources.NamespaceSelector, want) {
		return nil
	}
	if mcur.Spec.MatchResources == nil {
		mcur.Spec.MatchResources = &admissionv1.MatchResources{}
	}
	mcur.Spec.MatchResources.NamespaceSelector = want
	if err := r.Client.Update(ctx, mcur, client.FieldOwner(wellknown.FieldManager)); err != nil {
		return fmt.Errorf("restoring MutatingAdmissionPolicyBinding %s: %w", b.jobName, err)
	}
	return nil
}

// holdBinding is one way a namespace is held: a label, and the bindings that select by it.
type holdBinding struct {
	name, jobName string
	label, value  string
}

func holdBindings() []holdBinding {
	return []holdBinding{
		{name: HoldPolicyName, jobName: JobPolicyName, label: wellknown.PropagationLabel, value: wellknown.PropagationEnabled},
		{name: KeptBindingName, jobName: JobKeptBindingName, label: wellknown.HeldLabel, value: wellknown.HeldTrue},
	}
}

// selector is the namespace selector of the binding, typed. It selects by label alone: the
// namespaces that are never held whatever their labels say (internal/systemnamespace, a rule
// with prefixes that a selector cannot express) are left out by the policies' match
// condition notSystemNamespace.
func (b holdBinding) selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{b.label: b.value}}
}

func (b holdBinding) selectorApply() *metav1ac.LabelSelectorApplyConfiguration {
	return metav1ac.LabelSelector().WithMatchLabels(map[string]string{b.label: b.value})
}

// notSystemNamespace is the match condition that leaves the namespaces Flotilla never
// propagates from out of a policy, whatever their labels say: the same rule as the
// detector's. Cluster-scoped requests have no namespace; the condition before this one
// ("namespaced") is false for them, which skips the policy before this one's error counts.
func notSystemNamespace() *admissionv1ac.MatchConditionApplyConfiguration {
	return admissionv1ac.MatchCondition().
		WithName("not-system-namespace").
		WithExpression("!" + systemnamespace.CEL("request.namespace"))
}

func (b holdBinding) validating() *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(b.name).
		WithLabels(managedByFlotilla()).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(HoldPolicyName).
			WithValidationActions(admissionv1.Deny).
			WithMatchResources(admissionv1ac.MatchResources().WithNamespaceSelector(b.selectorApply())))
}

func (b holdBinding) mutating() *admissionv1ac.MutatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.MutatingAdmissionPolicyBinding(b.jobName).
		WithLabels(managedByFlotilla()).
		WithSpec(admissionv1ac.MutatingAdmissionPolicyBindingSpec().
			WithPolicyName(JobPolicyName).
			WithMatchResources(admissionv1ac.MatchResources().WithNamespaceSelector(b.selectorApply())))
}

func managedByFlotilla() map[string]string {
	return map[string]string{"app.kubernetes.io/managed-by": "flotilla"}
}

// HoldBindings are the ValidatingAdmissionPolicyBindings of the hold.
func HoldBindings() []*admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	var out []*admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration
	for _, b := range holdBindings() {
		out = append(out, b.validating())
	}
	return out
}

// JobBindings are the MutatingAdmissionPolicyBindings of the hold.
func JobBindings() []*admissionv1ac.MutatingAdmissionPolicyBindingApplyConfiguration {
	var out []*admissionv1ac.MutatingAdmissionPolicyBindingApplyConfiguration
	for _, b := range holdBindings() {
		out = append(out, b.mutating())
	}
	return out
}

// celList renders identities as a CEL list literal; ValidateHostControllers has checked them.
func celList(ids []string) string {
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = strconv.Quote(id)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// HoldPolicy is the ValidatingAdmissionPolicy of the host hold; ids are the host controllers.
func HoldPolicy(ids []string) *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	// Namespaced only: a binding's namespace selector never exempts cluster-scoped objects
	// (Nodes, PersistentVolumes, CertificateSigningRequests), which host controllers must
	// keep writing.
	rule := func(op admissionv1.OperationType, group string, resources ...string) *admissionv1ac.NamedRuleWithOperationsApplyConfiguration {
		return admissionv1ac.NamedRuleWithOperations().
			WithOperations(op).WithAPIGroups(group).WithAPIVersions("*").WithResources(resources...).
			WithScope(admissionv1.NamespacedScope)
	}
	create, update := admissionv1.OperationType(admissionv1.Create), admissionv1.OperationType(admissionv1.Update)
	exclude := func(group string, resources ...string) *admissionv1ac.NamedRuleWithOperationsApplyConfiguration {
		return admissionv1ac.NamedRuleWithOperations().
			WithOperations(admissionv1.OperationAll).WithAPIGroups(group).WithAPIVersions("*").WithResources(resources...)
	}
	validation := func(expr, what string) *admissionv1ac.ValidationApplyConfiguration {
		return admissionv1ac.Validation().WithExpression(expr).WithMessage(fmt.Sprintf(HoldMessage, what))
	}
	const (
		create_   = "variables.create"
		byHost    = "variables.hostController"
		mainWrite = "variables.hostUpdate && variables.subresource == ''"
	)
	return admissionv1ac.ValidatingAdmissionPolicy(HoldPolicyName).
		WithLabels(managedByFlotilla()).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicySpec().
			WithFailurePolicy(admissionv1.Fail).
			WithMatchConstraints(admissionv1ac.MatchResources().
				WithResourceRules(
					rule(create, "", "pods", "persistentvolumeclaims"),
					rule(create, "apps", "replicasets", "controllerrevisions"),
					rule(create, "batch", "jobs"),
					rule(update, "*", "*", "*/status", "*/scale"),
				).
				WithExcludeResourceRules(
					exclude("", "namespaces", "namespaces/*", "resourcequotas", "resourcequotas/*", "events"),
					exclude("events.k8s.io", "events"),
					exclude("coordination.k8s.io", "leases"),
				)).
			WithMatchConditions(
				// Belt and braces to the rules' scope: a request without a namespace (the key is
				// absent, not empty) is never held.
				admissionv1ac.MatchCondition().
					WithName("namespaced").
					WithExpression("has(request.namespace) && request.namespace != ''"),
				notSystemNamespace(),
				// Updates by anyone else (users, Flotilla itself) skip the policy at once.
				admissionv1ac.MatchCondition().
					WithName("creates-or-host-controllers").
					WithExpression("request.operation == 'CREATE' || request.userInfo.username in "+celList(ids))).
			WithVariables(
				admissionv1ac.Variable().WithName("create").WithExpression("request.operation == 'CREATE'"),
				// The request has no subResource key at all for the main resource.
				admissionv1ac.Variable().WithName("subresource").WithExpression("has(request.subResource) ? request.subResource : ''"),
				admissionv1ac.Variable().WithName("hostController").WithExpression("request.userInfo.username in "+celList(ids)),
				// Pods in a held namespace are ones that were there before it opted in: the
				// hold leaves them to their controllers and kubelets.
				admissionv1ac.Variable().WithName("hostUpdate").WithExpression(
					"request.operation == 'UPDATE' && request.resource.resource != 'pods' && request.userInfo.username in "+celList(ids)),
			).
			WithValidations(
				validation("!"+create_+" || request.resource.resource != 'pods'", "create Pods"),
				validation("!"+create_+" || request.resource.resource != 'replicasets' || !object.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'Deployment')",
					"create ReplicaSets of Deployments"),
				validation("!"+create_+" || request.resource.resource != 'jobs' || !object.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'CronJob')",
					"create Jobs of CronJobs"),
				validation("!"+create_+" || request.resource.resource != 'persistentvolumeclaims' || !"+byHost,
					"create PersistentVolumeClaims for workloads"),
				validation("!"+create_+" || request.resource.resource != 'controllerrevisions' || !"+byHost,
					"create ControllerRevisions for workloads"),
				validation("!(variables.hostUpdate && variables.subresource == 'status')",
					"write templates' status from host controllers: Flotilla writes the fleet's status there"),
				validation("!(variables.hostUpdate && variables.subresource == 'scale')",
					"scale templates from host controllers (a template's replicas are spread over the members)"),
				validation("!("+mainWrite+" && object.metadata.?finalizers.orValue([]).exists(f, !(f in oldObject.metadata.?finalizers.orValue([]))))",
					"let host controllers add finalizers to templates (for example to set up a cloud load balancer)"),
				validation("!("+mainWrite+" && request.resource.resource == 'persistentvolumeclaims' && "+
					"(object.spec.?volumeName.orValue('') != oldObject.spec.?volumeName.orValue('') || "+
					"object.metadata.?annotations.orValue({}) != oldObject.metadata.?annotations.orValue({})))",
					"bind or provision volumes for PersistentVolumeClaim templates"),
			))
}

// JobPolicy is the MutatingAdmissionPolicy that sets spec.managedBy on Jobs created in held
// namespaces without one, so that the host's Job controller leaves them alone (they are
// rendered for members without it).
func JobPolicy() *admissionv1ac.MutatingAdmissionPolicyApplyConfiguration {
	return admissionv1ac.MutatingAdmissionPolicy(JobPolicyName).
		WithLabels(managedByFlotilla()).
		WithSpec(admissionv1ac.MutatingAdmissionPolicySpec().
			WithFailurePolicy(admissionv1.Fail).
			WithReinvocationPolicy(admissionv1.NeverReinvocationPolicy).
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
				admissionv1ac.NamedRuleWithOperations().
					WithOperations(admissionv1.Create).WithAPIGroups("batch").WithAPIVersions("v1").WithResources("jobs"))).
			WithMatchConditions(
				admissionv1ac.MatchCondition().
					WithName("not-managed-yet").
					WithExpression("object.spec.?managedBy.orValue('') == ''"),
				notSystemNamespace()).
			WithMutations(admissionv1ac.Mutation().
				WithPatchType(admissionv1.PatchTypeApplyConfiguration).
				WithApplyConfiguration(admissionv1ac.ApplyConfiguration().
					WithExpression(fmt.Sprintf("Object{spec: Object.spec{managedBy: %q}}", wellknown.JobManagedBy)))))
}

// ServesMutatingPolicies reports whether the host serves admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy.
func ServesMutatingPolicies(mapper meta.RESTMapper) bool {
	_, err := mapper.RESTMapping(schema.GroupKind{Group: admissionv1.GroupName, Kind: "MutatingAdmissionPolicy"}, "v1")
	return err == nil
}

// SetupWithManager applies the hold at start-up and again whenever its objects change.
func (r *HoldReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := ValidateHostControllers(r.HostControllers); err != nil {
		return err
	}
	r.Jobs = ServesMutatingPolicies(mgr.GetRESTMapper())
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	if !r.Jobs {
		mgr.GetLogger().Info("The host does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36+): held Jobs keep no spec.managedBy, and the host's Job controller retries them, denied")
	}
	names := map[string]bool{HoldPolicyName: true, KeptBindingName: true, JobPolicyName: true, JobKeptBindingName: true}
	ours := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return names[o.GetName()] }))
	toSingleton := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: HoldPolicyName}}}
	})
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: HoldPolicyName}}}
	b := ctrl.NewControllerManagedBy(mgr).Named("template-hold").
		For(&admissionv1.ValidatingAdmissionPolicy{}, ours).
		Watches(&admissionv1.ValidatingAdmissionPolicyBinding{}, toSingleton, ours).
		WatchesRawSource(source.Channel(start, toSingleton))
	if r.Jobs {
		b = b.Watches(&admissionv1.MutatingAdmissionPolicy{}, toSingleton, ours).
			Watches(&admissionv1.MutatingAdmissionPolicyBinding{}, toSingleton, ours)
	}
	return b.Complete(r)
}
