// Package wellknown declares, once, every label, annotation, finalizer, condition, reason and
// name that Flotilla and its users agree on. Keys are Karmada's wherever Karmada defines one, so
// tools written for Karmada keep working.
package wellknown

// Namespaces and names.
const (
	// ExecutionNamespacePrefix prefixes the host namespace that holds a member cluster's Works:
	// karmada-es-<cluster>.
	ExecutionNamespacePrefix = "karmada-es-"

	// SystemNamespace is where the manager runs and where join writes member credentials.
	SystemNamespace = "flotilla-system"

	// FieldManager is the server-side apply field manager for every write Flotilla makes to
	// member clusters.
	FieldManager = "flotilla"

	// DefaultSchedulerName is the scheduler a policy names when it names none.
	DefaultSchedulerName = "default-scheduler"
)

// ExecutionNamespace returns the execution namespace of a member cluster.
func ExecutionNamespace(cluster string) string { return ExecutionNamespacePrefix + cluster }

// Member credentials. A Push Cluster's spec.secretRef names a host Secret with these keys
// (Karmada's), written by join.
const (
	// SecretKeyToken holds the bearer token the control plane uses in the member.
	SecretKeyToken = "token"
	// SecretKeyCABundle holds the PEM CA bundle that signed the member apiserver's certificate.
	SecretKeyCABundle = "caBundle"
)

// MemberAccessName is the name join gives, in the member and in SystemNamespace, to the
// ServiceAccount, ClusterRole and ClusterRoleBinding through which the control plane acts on
// the member joined as cluster: flotilla-<cluster>.
func MemberAccessName(cluster string) string { return "flotilla-" + cluster }

// JoinedClusterLabel marks what join created, in the member and in the host, with the name
// of the Cluster it was created for.
const JoinedClusterLabel = "flotilla.io/cluster"

// AllowRBACEscalationAnnotation ("true") on a Cluster records that it was joined (or
// registered) with --allow-rbac-escalation: its member credential holds escalate and bind on
// Roles and ClusterRoles and may write ClusterRoleBindings, so RBAC objects granting rights it
// does not hold itself can be propagated there. Join and register set it, and remove it when
// run again without the flag; the same annotation marks the member's ClusterRole.
const AllowRBACEscalationAnnotation = "flotilla.io/allow-rbac-escalation"

// Namespace opt-in.
const (
	// PropagationLabel opts a namespace in: objects created in a namespace labelled
	// flotilla.io/propagation=enabled are templates, propagated to members and held inert on
	// the host.
	PropagationLabel = "flotilla.io/propagation"
	// PropagationEnabled is the value of PropagationLabel that opts a namespace in.
	PropagationEnabled = "enabled"
	// HeldLabel keeps a namespace's templates held on the host. Flotilla sets it to "true" on
	// every opted-in namespace and never removes it: removing PropagationLabel stops
	// propagation but keeps the hold, so the host's controllers do not start the templates by
	// surprise. Removing HeldLabel (with PropagationLabel gone) is the user's confirmation
	// that the host may run them.
	HeldLabel = "flotilla.io/held"
	// HeldTrue is the value of HeldLabel.
	HeldTrue = "true"
	// JobManagedBy is the spec.managedBy the host puts on Jobs created in held namespaces,
	// so that the host's Job controller leaves them alone. It is removed when a Job is
	// rendered for a member; any other value is the user's and is kept.
	JobManagedBy = "flotilla.io/template"
)

// Labels and annotations on templates claimed by a policy.
const (
	PropagationPolicyPermanentIDLabel        = "propagationpolicy.karmada.io/permanent-id"
	PropagationPolicyNamespaceAnnotation     = "propagationpolicy.karmada.io/namespace"
	PropagationPolicyNameAnnotation          = "propagationpolicy.karmada.io/name"
	ClusterPropagationPolicyPermanentIDLabel = "clusterpropagationpolicy.karmada.io/permanent-id"
	ClusterPropagationPolicyNameAnnotation   = "clusterpropagationpolicy.karmada.io/name"
)

// Permanent IDs set on create of policies, bindings and works.
const (
	ResourceBindingPermanentIDLabel        = "resourcebinding.karmada.io/permanent-id"
	ClusterResourceBindingPermanentIDLabel = "clusterresourcebinding.karmada.io/permanent-id"
	WorkPermanentIDLabel                   = "work.karmada.io/permanent-id"
)

// Annotations on bindings and works.
const (
	// AppliedPlacementAnnotation holds the JSON of the placement a binding was last scheduled with.
	AppliedPlacementAnnotation = "policy.karmada.io/applied-placement"
	// InterpreterRevisionAnnotation on a binding is the revision of the customization its
	// replicas were read with (ResourceInterpreterCustomization), so that a changed
	// customization is applied to existing templates.
	InterpreterRevisionAnnotation = "flotilla.io/interpreter-revision"

	ResourceBindingNamespaceAnnotation   = "resourcebinding.karmada.io/namespace"
	ResourceBindingNameAnnotation        = "resourcebinding.karmada.io/name"
	ClusterResourceBindingNameAnnotation = "clusterresourcebinding.karmada.io/name"
	AppliedOverridesAnnotation           = "policy.karmada.io/applied-overrides"
	AppliedClusterOverridesAnnotation    = "policy.karmada.io/applied-cluster-overrides"
)

// Labels and annotations on member objects.
const (
	ManagedLabel                         = "karmada.io/managed"
	ManagedLabelValue                    = "true"
	WorkNamespaceAnnotation              = "work.karmada.io/namespace"
	WorkNameAnnotation                   = "work.karmada.io/name"
	ResourceTemplateUIDAnnotation        = "resourcetemplate.karmada.io/uid"
	ResourceTemplateGenerationAnnotation = "resourcetemplate.karmada.io/generation"
	// HostIDAnnotation names the control plane that manages a member object: the UID of the
	// host's kube-system namespace. An object labelled karmada.io/managed by another control
	// plane (another Flotilla, or Karmada) is a conflict, not something to take over.
	HostIDAnnotation = "flotilla.io/host-id"
	// AppliedDigestAnnotation on a member object is the digest of what Flotilla last applied
	// to it (internal/applied.Digest): with the fields Flotilla's apply owns, which the member
	// cache keeps a digest of, it tells after a restart that the object is as last applied
	// without reading it from the member.
	AppliedDigestAnnotation = "flotilla.io/applied-digest"
)

// KeepWorkloadsAnnotation on a Cluster being deleted leaves the member objects of its Works
// in place (orphaned) instead of deleting them: `kubectl flotilla unjoin --keep-workloads`
// sets it before it deletes the Cluster.
const KeepWorkloadsAnnotation = "flotilla.io/keep-workloads"

// KeepManagedAnnotation ("true") on a Work whose spec.preserveResourcesOnDeletion is set
// keeps its member objects as they are, still managed, when the Work goes: its binding went
// while its template stayed on the host (the template's namespace opted out, its policy was
// deleted, the binding itself was deleted), and the template's next binding takes them back.
// Without it a preserving Work releases its member objects as Karmada does: they stay,
// without the labels and annotations that mark them as managed (see
// memberobject.ReleasePatch), and are the member's from then on.
const KeepManagedAnnotation = "flotilla.io/keep-managed"

// AdoptKarmadaUIDAnnotation on a template names the UID the same template had in a Karmada
// control plane it was migrated from (`kubectl flotilla migrate` sets it). Member objects that
// Karmada made for that template (karmada.io/managed, no host id, and that UID in their
// resourcetemplate.karmada.io/uid) are adopted in place: no Conflict, no new object, and
// Karmada's labels, annotations and field managers are replaced by Flotilla's.
const AdoptKarmadaUIDAnnotation = "flotilla.io/adopt-karmada-uid"

// KarmadaFieldManagerPrefix starts the field managers of Karmada's binaries
// (karmada-controller-manager, karmada-agent): an adopted object loses their managedFields.
const KarmadaFieldManagerPrefix = "karmada-"

// User opt-outs on templates.
const (
	// ConflictResolutionAnnotation on a template overrides the policy's conflictResolution:
	// "overwrite" or "abort".
	ConflictResolutionAnnotation = "work.karmada.io/conflict-resolution"
	ConflictResolutionOverwrite  = "overwrite"
	ConflictResolutionAbort      = "abort"

	// RetainReplicasLabel on a template keeps the replicas the member has (an HPA's, say)
	// instead of the ones the scheduler assigned.
	RetainReplicasLabel = "resourcetemplate.karmada.io/retain-replicas"
)

// Finalizers.
const (
	ClusterControllerFinalizer   = "karmada.io/cluster-controller"
	ExecutionControllerFinalizer = "karmada.io/execution-controller"
	BindingControllerFinalizer   = "karmada.io/binding-controller"
	// DependenciesFinalizer on a workload's binding that propagates its dependencies keeps
	// the binding until the dependencies controller has released them, with the workload's
	// preserveResourcesOnDeletion: the decision to keep them on members does not depend on
	// which controller looks first.
	DependenciesFinalizer = "flotilla.io/dependencies"
)

// System taints the cluster controller keeps in line with the Ready condition.
const (
	TaintClusterNotReady    = "cluster.karmada.io/not-ready"
	TaintClusterUnreachable = "cluster.karmada.io/unreachable"
	// TaintClusterTerminating marks a Cluster being deleted.
	TaintClusterTerminating = "cluster.karmada.io/terminating"
)

// TaintClusterCordoned is the NoSchedule taint `kubectl flotilla cordon` puts on a Cluster:
// nothing new is scheduled there, and what is there stays until a rebalance.
const TaintClusterCordoned = "cluster.flotilla.io/cordoned"

// Condition types.
const (
	// ClusterConditionReady is the Cluster condition that says whether the member is healthy.
	ClusterConditionReady = "Ready"
	// ConditionScheduled says whether a binding has been scheduled.
	ConditionScheduled = "Scheduled"
	// ConditionFullyApplied says whether every Work of a binding is applied.
	ConditionFullyApplied = "FullyApplied"
	// WorkConditionApplied says whether a Work's manifests are applied in its member.
	WorkConditionApplied = "Applied"
	// WorkConditionAvailable says whether a Work's member objects are healthy.
	WorkConditionAvailable = "Available"
	// ConditionOverridden says whether a binding's overrides could be rendered.
	ConditionOverridden = "Overridden"
	// ConditionInterpreted says whether the template's replicas, requirements and components
	// could be read for its binding; False names the customization, the operation and the line.
	// It is written once something failed (True is the default).
	ConditionInterpreted = "Interpreted"
)

// Condition reasons.
const (
	ClusterReasonReady        = "ClusterReady"
	ClusterReasonNotReady     = "ClusterNotReady"
	ClusterReasonNotReachable = "ClusterNotReachable"

	ReasonBindingScheduled     = "Success"
	ReasonBindingUnschedulable = "Unschedulable"
	ReasonSchedulerError       = "SchedulerError"
	ReasonNoClusterFit         = "NoClusterFit"

	ReasonFullyApplied    = "FullyAppliedSuccess"
	ReasonNotFullyApplied = "FullyAppliedFailed"

	ReasonAppliedSuccessful  = "AppliedSuccessful"
	ReasonAppliedFailed      = "AppliedFailed"
	ReasonConflict           = "Conflict"
	ReasonClusterUnreachable = "ClusterUnreachable"

	ReasonOverrideFailed    = "OverrideFailed"
	ReasonOverrideSucceeded = "OverrideSucceeded"

	ReasonInterpreterFailed = "InterpreterFailed"
	ReasonInterpreted       = "Interpreted"
)

// Event reasons.
const (
	// Karmada's reasons (its pkg/events), for the same situations; docs/event-reasons.md
	// lists where Flotilla's events still differ.
	//
	// EventReasonApplyPolicyFailed: a policy could not be applied to a template, or no
	// policy matches it (a Warning with MessageNoPolicyMatch), as Karmada's detector says.
	// EventReasonPreemptPolicySucceed: a policy with preemption: Always took a template from
	// the policy that claimed it (besides ApplyPolicySucceed).
	EventReasonApplyPolicySucceed     = "ApplyPolicySucceed"
	EventReasonApplyPolicyFailed      = "ApplyPolicyFailed"
	EventReasonPreemptPolicySucceed   = "PreemptPolicySucceed"
	EventReasonScheduleBindingSucceed = "ScheduleBindingSucceed"
	EventReasonScheduleBindingFailed  = "ScheduleBindingFailed"
	EventReasonApplyOverrideSucceed   = "ApplyOverridePolicySucceed"
	EventReasonApplyOverrideFailed    = "ApplyOverridePolicyFailed"
	EventReasonSyncWorkSucceed        = "SyncWorkSucceed"
	EventReasonSyncWorkFailed         = "SyncWorkFailed"
	// EventReasonSyncWorkloadFailed: a Work's manifests could not be applied to its member
	// (a Warning on the Work), Karmada's execution controller's reason.
	EventReasonSyncWorkloadFailed = "SyncFailed"
	// EventReasonAdopted: a Work took over, in place, a member object Karmada made for the
	// template it was migrated from (Flotilla's own).
	EventReasonAdopted                     = "AdoptedFromKarmada"
	EventReasonAggregateStatusSucceed      = "AggregateStatusSucceed"
	EventReasonAggregateStatusFailed       = "AggregateStatusFailed"
	EventReasonWorkDispatching             = "WorkDispatching"
	EventReasonCreateExecutionSpaceSucceed = "CreateExecutionSpaceSucceed"
	EventReasonCreateExecutionSpaceFailed  = "CreateExecutionSpaceFailed"
	EventReasonRemoveExecutionSpaceSucceed = "RemoveExecutionSpaceSucceed"
	EventReasonRemoveExecutionSpaceFailed  = "RemoveExecutionSpaceFailed"
	EventReasonCollectClusterStatusFailed  = "CollectClusterStatusFailed"
	EventReasonTaintClusterSucceed         = "TaintClusterSucceed"
	EventReasonClusterNotReady             = "ClusterNotReady"
	EventReasonClusterReady                = "ClusterReady"
	EventReasonAgentAccessFailed           = "AgentAccessFailed"
	// EventReasonBootstrapTokenConsumed: a Pull Cluster's agent reports with the credential
	// its bootstrap token fetched, and the token was deleted.
	EventReasonBootstrapTokenConsumed = "BootstrapTokenConsumed"

	// Dependencies (propagateDeps), on the workload's template.
	EventReasonGetDependenciesFailed                   = "GetDependenciesFailed"
	EventReasonDependencyMissing                       = "DependencyMissing"
	EventReasonSyncScheduleResultToDependenciesSucceed = "SyncScheduleResultToDependenciesSucceed"
	EventReasonSyncScheduleResultToDependenciesFailed  = "SyncScheduleResultToDependenciesFailed"
	// EventReasonDependentOverridesMissing: the policy's dependentOverrides do not all exist
	// yet, so the template waits.
	EventReasonDependentOverridesMissing = "DependentOverridesMissing"
	// EventReasonReplicasNotDivided: a Divided placement selects a kind whose replicas
	// Flotilla does not know; it goes whole to each cluster.
	EventReasonReplicasNotDivided = "ReplicasNotDivided"
	// EventReasonFieldsNotActedOn: a policy or Cluster sets fields Flotilla accepts but does
	// not act on yet (internal/notacted); a Warning once per generation.
	EventReasonFieldsNotActedOn = "FieldsNotActedOn"

	// ResourceInterpreterCustomization events.
	EventReasonCustomizationLoaded       = "CustomizationLoaded"
	EventReasonCustomizationLoadFailed   = "CustomizationLoadFailed"
	EventReasonCustomizationScriptFailed = "CustomizationScriptFailed"

	// ResourceInterpreterWebhookConfiguration events: its webhooks are in use, are not (a
	// client config Flotilla cannot use), or a call failed (the message names the webhook).
	EventReasonInterpreterWebhookLoaded     = "InterpreterWebhookLoaded"
	EventReasonInterpreterWebhookLoadFailed = "InterpreterWebhookLoadFailed"
	EventReasonInterpreterWebhookCallFailed = "InterpreterWebhookCallFailed"

	// CronFederatedHPA events: a rule fired and set the fleet's replicas (Flotilla's reason),
	// or it could not, or a rule cannot fire (Karmada's ScaleFailed).
	EventReasonScaleSucceeded = "ScaleSucceeded"
	EventReasonScaleFailed    = "ScaleFailed"

	// CronScaleAnnotation, on a ResourceBinding, names the CronFederatedHPA whose replicas the
	// binding takes, the rule, when it fired and the replicas (internal/cronfhpa.Active.Marker).
	CronScaleAnnotation = "autoscaling.flotilla.io/cron-scale"

	// FederatedHPAAnnotation, on a ResourceBinding, names the FederatedHPA whose desired
	// replicas the binding takes (internal/fhpa.Active.Marker).
	FederatedHPAAnnotation = "autoscaling.flotilla.io/federated-hpa"

	// FederatedHPA events (the HorizontalPodAutoscaler controller's reasons).
	EventReasonSuccessfulRescale = "SuccessfulRescale"
)

// Messages users search for.
const (
	// MessageNoPolicyMatch is the note of the ApplyPolicyFailed Warning a template gets once
	// while no policy selects it (Karmada's wording).
	MessageNoPolicyMatch = "No policy match for resource"
)

// The Cluster Inventory API (multicluster.x-k8s.io) Flotilla publishes for other tools.
const (
	// ClusterInventoryNamespace is the default namespace of the ClusterProfiles Flotilla
	// keeps, one per member (--cluster-profile-namespace). KEP-4322 asks for the profiles of
	// one inventory to sit together in a dedicated namespace of the hub, labelled
	// multicluster.x-k8s.io/clusterset=<set> when the inventory is a ClusterSet, without
	// naming it; this is the name the Cluster Inventory API's guide for cluster managers uses.
	ClusterInventoryNamespace = "cluster-inventory"
	// ClusterManagerName is Flotilla's name as a cluster manager: spec.clusterManager.name
	// and the x-k8s.io/cluster-manager label of its ClusterProfiles.
	ClusterManagerName = "flotilla"
	// InventoryManagedByLabel marks, with value InventoryManagedBy, the ClusterProfiles and
	// PlacementDecisions Flotilla keeps: the only ones its guard lets it write.
	InventoryManagedByLabel = "app.kubernetes.io/managed-by"
	// InventoryManagedBy is the value of InventoryManagedByLabel.
	InventoryManagedBy = "flotilla"
)

// Cluster API auto-join (controllers/capijoin).
const (
	// CAPIJoinLabel ("true") on a Cluster API Cluster (cluster.x-k8s.io) asks Flotilla to join
	// it as a member once its control plane is initialized, and to unjoin it when the label
	// goes or the Cluster is deleted.
	CAPIJoinLabel = "flotilla.io/join"
	// CAPIKeepWorkloadsLabel ("true") on a Cluster API Cluster leaves the workloads Flotilla
	// propagated to it in place when it is unjoined; without it they are deleted.
	CAPIKeepWorkloadsLabel = "flotilla.io/keep-workloads"
	// CAPIMemberNameLabel on a Cluster API Cluster names the Flotilla Cluster it joins as;
	// by default the Cluster API Cluster's own name.
	CAPIMemberNameLabel = "flotilla.io/member-name"
	// CAPIProviderLabel on a Cluster API Cluster sets the member's provider; by default the
	// kind of its infrastructure, without "Cluster", in lower case (DockerCluster: docker).
	CAPIProviderLabel = "flotilla.io/provider"
	// OriginLabel on a Flotilla Cluster says where it came from: OriginClusterAPI for one
	// joined from a Cluster API Cluster.
	OriginLabel = "flotilla.io/origin"
	// OriginClusterAPI is the value of OriginLabel of Clusters joined from Cluster API.
	OriginClusterAPI = "cluster-api"
	// CAPIClusterAnnotation on a Flotilla Cluster joined from Cluster API names its Cluster
	// API Cluster: <namespace>/<name>. Such a Cluster carries KeepWorkloadsAnnotation while
	// its Cluster API Cluster has CAPIKeepWorkloadsLabel.
	CAPIClusterAnnotation = "flotilla.io/cluster-api-cluster"
)
