package detector_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// databaseCRD serves example.flotilla.io/v1 Database, a namespaced kind with spec.replicas
// that Flotilla does not know.
func databaseCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "databases.example.flotilla.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.flotilla.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "databases", Singular: "database", Kind: "Database", ListKind: "DatabaseList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true)}}}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

var _ = Describe("Waiting and saying so", func() {
	It("waits for a policy's dependentOverrides before claiming or binding, and goes on when they exist", func(ctx SpecContext) {
		const ns = "det-depoverrides"
		env.TemplateNamespace(ctx, ns)
		cm := fleettest.ConfigMap(ns, "settings", nil)
		Expect(env.Host.Create(ctx, cm)).To(Succeed())
		pp := createPP(ctx, ns, "settings", selectConfigMap("settings"), func(s *policyv1alpha1.PropagationSpec) {
			s.DependentOverrides = []string{"region-a", "region-b"}
		})
		Eventually(func(g Gomega) []string {
			var notes []string
			for _, e := range env.Events(ctx, g, cm) {
				if e.Reason == wellknown.EventReasonDependentOverridesMissing {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}).WithContext(ctx).Should(ContainElement(ContainSubstring("region-a, region-b")))
		Consistently(func() error {
			return env.Host.Get(ctx, client.ObjectKeyFromObject(rb(ns, "ConfigMap", "settings")), &workv1alpha2.ResourceBinding{})
		}, 2*time.Second).Should(MatchError(ContainSubstring("not found")), "nothing is bound before the overrides exist")

		for _, name := range []string{"region-a", "region-b"} {
			op := &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: policyv1alpha1.OverrideSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{selectConfigMap("settings")}}}
			Expect(env.Host.Create(ctx, op)).To(Succeed())
		}
		expectClaimedBy(ctx, cm, pp)
	})

	It("does not divide a kind whose replicas it does not know, and says so", func(ctx SpecContext) {
		const ns = "det-unknown"
		env.TemplateNamespace(ctx, ns)
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(databaseCRD())
		Expect(err).NotTo(HaveOccurred())
		crd := &unstructured.Unstructured{Object: raw}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		Expect(env.Host.Create(ctx, crd)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Host.Delete(ctx, crd))).To(Succeed()) })
		db := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.flotilla.io/v1", "kind": "Database",
			"metadata": map[string]any{"namespace": ns, "name": "orders"},
			"spec":     map[string]any{"replicas": int64(3)},
		}}
		Eventually(func() error { return env.Host.Create(ctx, db.DeepCopy()) }).WithContext(ctx).Should(Succeed())
		Expect(env.Host.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		createPP(ctx, ns, "orders", policyv1alpha1.ResourceSelector{APIVersion: "example.flotilla.io/v1", Kind: "Database", Name: "orders"},
			func(s *policyv1alpha1.PropagationSpec) {
				s.Placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				}
			})
		Eventually(func(g Gomega) {
			b := rb(ns, "Database", "orders")
			env.Get(ctx, g, b)
			g.Expect(b.Spec.Replicas).To(BeZero(), "a 3-node database is not split 1+1+1")
			g.Expect(env.EventReasons(ctx, g, db)).To(ContainElement(wellknown.EventReasonReplicasNotDivided))
		}).WithContext(ctx).Should(Succeed())
	})
})
