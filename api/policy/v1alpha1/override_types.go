package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=op,categories={karmada-io}

// OverridePolicy customises the templates of its namespace per member cluster.
type OverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which templates to change, where, and how.
	// +required
	Spec OverrideSpec `json:"spec"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cop,categories={karmada-io}

// ClusterOverridePolicy customises templates of any namespace per member cluster.
type ClusterOverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which templates to change, where, and how.
	// +required
	Spec OverrideSpec `json:"spec"`
}

// OverrideSpec is the spec of OverridePolicy and ClusterOverridePolicy.
// +kubebuilder:validation:XValidation:rule="!has(self.overrideRules) || size(self.overrideRules) == 0 || (!has(self.targetCluster) && (!has(self.overriders) || !(has(self.overriders.plaintext) || has(self.overriders.imageOverrider) || has(self.overriders.commandOverrider) || has(self.overriders.argsOverrider) || has(self.overriders.labelsOverrider) || has(self.overriders.annotationsOverrider) || has(self.overriders.fieldOverrider))))",message="overrideRules cannot be combined with the deprecated targetCluster and overriders: move them into an overrideRules entry"
type OverrideSpec struct {
	// ResourceSelectors select the templates to change; none selects every template.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	ResourceSelectors []ResourceSelector `json:"resourceSelectors,omitempty"`

	// OverrideRules are applied in order, each on the clusters its targetCluster selects.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	OverrideRules []RuleWithCluster `json:"overrideRules,omitempty"`

	// TargetCluster selects the clusters Overriders apply to. Deprecated: use OverrideRules.
	// +optional
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`

	// Overriders apply to TargetCluster. Deprecated: use OverrideRules.
	// +optional
	Overriders *Overriders `json:"overriders,omitempty"`
}

// RuleWithCluster is one override rule: overriders and the clusters they apply to.
type RuleWithCluster struct {
	// TargetCluster selects the clusters; unset selects every cluster.
	// +optional
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`

	// Overriders say how to change the template.
	// +required
	Overriders Overriders `json:"overriders"`
}

// Overriders change a template. Within a rule they apply in this order: image, command,
// args, labels, annotations, field, plaintext.
type Overriders struct {
	// Plaintext applies JSON patch operations.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Plaintext []PlaintextOverrider `json:"plaintext,omitempty"`

	// ImageOverrider changes container images.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ImageOverrider []ImageOverrider `json:"imageOverrider,omitempty"`

	// CommandOverrider changes container commands.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	CommandOverrider []CommandArgsOverrider `json:"commandOverrider,omitempty"`

	// ArgsOverrider changes container args.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ArgsOverrider []CommandArgsOverrider `json:"argsOverrider,omitempty"`

	// LabelsOverrider changes labels.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	LabelsOverrider []LabelAnnotationOverrider `json:"labelsOverrider,omitempty"`

	// AnnotationsOverrider changes annotations.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	AnnotationsOverrider []LabelAnnotationOverrider `json:"annotationsOverrider,omitempty"`

	// FieldOverrider changes a field that holds embedded JSON or YAML, such as a ConfigMap key.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	FieldOverrider []FieldOverrider `json:"fieldOverrider,omitempty"`
}

// OverriderOperator is a patch operation.
type OverriderOperator string

// Overrider operators.
const (
	OverriderOpAdd     OverriderOperator = "add"
	OverriderOpRemove  OverriderOperator = "remove"
	OverriderOpReplace OverriderOperator = "replace"
)

// PlaintextOverrider is one JSON patch operation on the template.
type PlaintextOverrider struct {
	// Path is a JSON pointer, for example /spec/replicas.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path"`
	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`
	// Value to add or replace with; ignored by remove.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// ImageComponent is a part of an image reference.
// +kubebuilder:validation:Enum=Registry;Repository;Tag
type ImageComponent string

// Image components.
const (
	Registry   ImageComponent = "Registry"
	Repository ImageComponent = "Repository"
	Tag        ImageComponent = "Tag"
)

// ImageOverrider changes one component of images.
type ImageOverrider struct {
	// Predicate picks the image by path; unset means every container image of known kinds.
	// +optional
	Predicate *ImagePredicate `json:"predicate,omitempty"`
	// Component is Registry, Repository or Tag.
	// +required
	Component ImageComponent `json:"component"`
	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`
	// Value of the component.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Value string `json:"value,omitempty"`
}

// ImagePredicate picks an image by its JSON pointer.
type ImagePredicate struct {
	// Path is a JSON pointer to an image string, for example /spec/template/spec/containers/0/image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path"`
}

// CommandArgsOverrider adds or removes a container's command or args.
type CommandArgsOverrider struct {
	// ContainerName of the container to change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ContainerName string `json:"containerName"`
	// Operator is add or remove.
	// +required
	// +kubebuilder:validation:Enum=add;remove
	Operator OverriderOperator `json:"operator"`
	// Value lists the strings to add or remove.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Value []string `json:"value,omitempty"`
}

// LabelAnnotationOverrider adds, removes or replaces labels or annotations.
type LabelAnnotationOverrider struct {
	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`
	// Value holds the keys and values.
	// +required
	Value map[string]string `json:"value"`
}

// FieldOverrider patches a string field that holds JSON or YAML.
// +kubebuilder:validation:XValidation:rule="(has(self.json) && size(self.json) > 0) != (has(self.yaml) && size(self.yaml) > 0)",message="fieldOverrider: set exactly one of json and yaml"
type FieldOverrider struct {
	// FieldPath is a JSON pointer to the string field, for example /data/config.yaml.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	FieldPath string `json:"fieldPath"`
	// JSON patches the field as JSON.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	JSON []JSONPatchOperation `json:"json,omitempty"`
	// YAML patches the field as YAML.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	YAML []YAMLPatchOperation `json:"yaml,omitempty"`
}

// JSONPatchOperation is one patch operation inside a JSON field.
type JSONPatchOperation struct {
	// SubPath is a JSON pointer inside the field.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	SubPath string `json:"subPath"`
	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`
	// Value to add or replace with.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// YAMLPatchOperation is one patch operation inside a YAML field.
type YAMLPatchOperation struct {
	// SubPath is a JSON pointer inside the field.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	SubPath string `json:"subPath"`
	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`
	// Value to add or replace with.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// +kubebuilder:object:root=true

// OverridePolicyList is a list of OverridePolicies.
type OverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OverridePolicy `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterOverridePolicyList is a list of ClusterOverridePolicies.
type ClusterOverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterOverridePolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OverridePolicy{}, &OverridePolicyList{},
		&ClusterOverridePolicy{}, &ClusterOverridePolicyList{})
}
