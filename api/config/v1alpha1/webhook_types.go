package v1alpha1

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={karmada-io}
// +kubebuilder:printcolumn:name="Webhooks",type=integer,JSONPath=`.status.webhooks`
// +kubebuilder:printcolumn:name="Loaded",type=string,JSONPath=`.status.conditions[?(@.type=="Loaded")].status`
// +kubebuilder:printcolumn:name="Webhooks-Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="WebhooksHealthy")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ResourceInterpreterWebhookConfiguration names webhooks that tell Flotilla, over HTTPS, how to
// interpret the kinds their rules match: replicas, how to give a member its share, which
// member values to keep, which status to reflect and how to add it up, health and
// dependencies. Karmada's interpreter webhook protocol (ResourceInterpreterContext,
// config.karmada.io/v1alpha1): a webhook written for Karmada works unchanged. A
// ResourceInterpreterCustomization that scripts an operation of a kind wins over a webhook;
// a webhook wins over Flotilla's built-in rules.
type ResourceInterpreterWebhookConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Webhooks are the webhooks, with the kinds and operations each interprets.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Webhooks []ResourceInterpreterWebhook `json:"webhooks"`

	// Status says whether the webhooks are in use and how their calls went. Flotilla's own
	// field, beside Karmada's; Karmada clients ignore it.
	// +optional
	Status ResourceInterpreterWebhookConfigurationStatus `json:"status,omitempty"`
}

// ResourceInterpreterWebhook is one webhook, and the kinds and operations it interprets.
// +kubebuilder:validation:XValidation:rule="has(self.clientConfig.url) || has(self.clientConfig.service)",message="clientConfig must set url or service"
// +kubebuilder:validation:XValidation:rule="!has(self.clientConfig.url) || self.clientConfig.url.startsWith('https://')",message="clientConfig.url must be an https:// URL"
type ResourceInterpreterWebhook struct {
	// Name is the webhook's fully qualified name (workloads.example.com), unique in the
	// configuration.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// ClientConfig says how to reach the webhook: url (https://host:port/path), or service
	// (a Service of the host cluster, called as https://NAME.NAMESPACE.svc:PORT/PATH, port 443
	// by default; the manager runs in the cluster). When both are set, service wins, as in
	// Karmada. caBundle is the PEM of the CA that signed the webhook's certificate; without it
	// the system's roots are used.
	// +required
	ClientConfig admissionregistrationv1.WebhookClientConfig `json:"clientConfig"`

	// Rules say which kinds and operations the webhook interprets; it interprets an operation
	// of a kind when any rule matches.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Rules []RuleWithOperations `json:"rules,omitempty"`

	// TimeoutSeconds is how long a call may take, 1 to 30 seconds; 10 by default. A call that
	// times out fails the operation, as any failed call does (Karmada has no failure policy
	// for interpreter webhooks): see docs/interpreter-webhook.md.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// InterpreterContextVersions are the ResourceInterpreterContext versions the webhook
	// accepts, preferred first. Flotilla speaks v1alpha1, which must be listed.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.exists(v, v == 'v1alpha1')",message="interpreterContextVersions must include v1alpha1, the only version Flotilla (and Karmada) speaks"
	// +listType=atomic
	InterpreterContextVersions []string `json:"interpreterContextVersions"`
}

// RuleWithOperations are operations and the kinds they apply to.
// +kubebuilder:validation:XValidation:rule="!self.operations.exists(o, o == '*') || self.operations.size() == 1",message="operations: '*' must be alone"
type RuleWithOperations struct {
	// Operations are the operations the webhook interprets; '*' is all of them.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Operations []InterpreterOperation `json:"operations"`

	// Rule is the kinds.
	Rule `json:",inline"`
}

// InterpreterOperation is an operation of the interpreter, as Karmada's protocol names it.
// +kubebuilder:validation:Enum="*";InterpretReplica;InterpretComponent;ReviseReplica;ReviseComponents;InterpretStatus;Prune;Retain;AggregateStatus;InterpretHealth;InterpretDependency
type InterpreterOperation string

// The operations of Karmada's protocol. Flotilla calls webhooks for all but InterpretComponent,
// ReviseComponents and Prune, which it accepts and does not call.
const (
	InterpreterOperationAll                 InterpreterOperation = "*"
	InterpreterOperationInterpretReplica    InterpreterOperation = "InterpretReplica"
	InterpreterOperationInterpretComponent  InterpreterOperation = "InterpretComponent"
	InterpreterOperationReviseReplica       InterpreterOperation = "ReviseReplica"
	InterpreterOperationReviseComponents    InterpreterOperation = "ReviseComponents"
	InterpreterOperationInterpretStatus     InterpreterOperation = "InterpretStatus"
	InterpreterOperationPrune               InterpreterOperation = "Prune"
	InterpreterOperationRetain              InterpreterOperation = "Retain"
	InterpreterOperationAggregateStatus     InterpreterOperation = "AggregateStatus"
	InterpreterOperationInterpretHealth     InterpreterOperation = "InterpretHealth"
	InterpreterOperationInterpretDependency InterpreterOperation = "InterpretDependency"
)

// Rule names kinds by API group, version and kind; '*' in a list matches all (and must be
// alone).
// +kubebuilder:validation:XValidation:rule="!self.apiGroups.exists(g, g == '*') || self.apiGroups.size() == 1",message="apiGroups: '*' must be alone"
// +kubebuilder:validation:XValidation:rule="!self.apiVersions.exists(v, v == '*') || self.apiVersions.size() == 1",message="apiVersions: '*' must be alone"
// +kubebuilder:validation:XValidation:rule="!self.kinds.exists(k, k == '*') || self.kinds.size() == 1",message="kinds: '*' must be alone"
type Rule struct {
	// APIGroups are the API groups; "" is the core group, '*' all groups.
	// +required
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	APIGroups []string `json:"apiGroups"`
	// APIVersions are the versions; '*' is all versions.
	// +required
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	APIVersions []string `json:"apiVersions"`
	// Kinds are the kinds (Deployment, Workload); '*' is all kinds.
	// +required
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	Kinds []string `json:"kinds"`
}

// ResourceInterpreterWebhookConfigurationStatus is Flotilla's report on a configuration.
type ResourceInterpreterWebhookConfigurationStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Webhooks is how many of the configuration's webhooks are in use.
	// +optional
	Webhooks int32 `json:"webhooks,omitempty"`
	// Conditions: Loaded (every webhook's client config is usable and the webhooks are in
	// use) and WebhooksHealthy (False with the latest failed call of this generation: which
	// webhook, which operation on which object, and why).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of a ResourceInterpreterWebhookConfiguration (Loaded is
// ConditionLoaded).
const (
	// ConditionWebhooksHealthy is False when a call to one of the webhooks failed.
	ConditionWebhooksHealthy = "WebhooksHealthy"
)

// +kubebuilder:object:root=true

// ResourceInterpreterWebhookConfigurationList is a list of ResourceInterpreterWebhookConfigurations.
type ResourceInterpreterWebhookConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceInterpreterWebhookConfiguration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceInterpreterWebhookConfiguration{}, &ResourceInterpreterWebhookConfigurationList{})
}
