package fleettest

import (
	"strings"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// CRD returns a CustomResourceDefinition (TypeMeta set, so it can travel in a Work) of a
// namespaced kind served in version v1 of group, with a status subresource and schemas that
// keep any spec and status fields. Its plural is the kind in lower case plus "s".
func CRD(group, kind string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	open := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List",
				Plural: plural, Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": *open, "status": *open,
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// CustomResource returns an object of crd's kind (version v1) in ns with the given spec.
func CustomResource(crd *apiextensionsv1.CustomResourceDefinition, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(CRDKind(crd))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// CRDKind is the group, version v1 and kind crd serves.
func CRDKind(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: crd.Spec.Group, Version: "v1", Kind: crd.Spec.Names.Kind}
}

// AsUnstructured converts a typed object with its TypeMeta set, for clients whose scheme
// does not know its kind (the suites' clients do not know apiextensions.k8s.io).
func AsUnstructured(obj runtime.Object) *unstructured.Unstructured {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	return &unstructured.Unstructured{Object: u}
}

// BrokenConversionCRD returns CRD(group, kind) served in v1 (its storage version) and v2,
// converted by a webhook that never answers (127.0.0.1:1): a member then cannot list or
// write v2 objects while any object is stored, which is what a custom resource whose
// conversion webhook is down looks like. Create an object in v1 to break its lists.
func BrokenConversionCRD(group, kind string) *apiextensionsv1.CustomResourceDefinition {
	crd := CRD(group, kind)
	v2 := *crd.Spec.Versions[0].DeepCopy()
	v2.Name, v2.Storage = "v2", false
	crd.Spec.Versions = append(crd.Spec.Versions, v2)
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/convert")}}}
	return crd
}
