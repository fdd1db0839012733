package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// generateBundle writes the bundle into a temporary root and loads it as OLM would.
func generateBundle(t *testing.T, o BundleOptions) (*manifests.Bundle, string) {
	t.Helper()
	files, err := BundleFiles(repoRoot(t), o)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for name, data := range files {
		path := filepath.Join(tmp, BundleDir, name)
		if name == BundleDockerfile {
			path = filepath.Join(tmp, name)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := manifests.GetBundleFromDir(filepath.Join(tmp, BundleDir))
	if err != nil {
		t.Fatal(err)
	}
	return b, tmp
}

// TestBundleValidates generates the OLM bundle and runs operator-framework's validators on it:
// the bundle, CSV and CRD validators (what `operator-sdk bundle validate` runs by default),
// good practices, the object validator and the removed-APIs check. Errors fail the test;
// warnings are reported and fail it too, so that the bundle stays clean.
func TestBundleValidates(t *testing.T) {
	b, _ := generateBundle(t, DefaultBundleOptions)
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.GoodPracticesValidator,
		validation.ObjectValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	var failed bool
	for _, r := range validators.Validate(validationObjects(b)...) {
		for _, e := range r.Errors {
			failed = true
			t.Errorf("%s: error: %s", r.Name, describe(e))
		}
		for _, w := range r.Warnings {
			failed = true
			t.Errorf("%s: warning: %s", r.Name, describe(w))
		}
	}
	if !failed {
		t.Logf("bundle %s: %d objects, no errors or warnings", b.Name, len(b.Objects))
	}
}

func validationObjects(b *manifests.Bundle) []any {
	return append(b.ObjectsToValidate(), map[string]string{"k8s-version": "1.30"})
}

// TestBundleValidatorsBite makes sure the validators do reject a broken bundle, so that a
// clean result above means something.
func TestBundleValidatorsBite(t *testing.T) {
	b, _ := generateBundle(t, DefaultBundleOptions)
	b.CSV.Spec.InstallModes = nil
	b.CSV.Spec.CustomResourceDefinitions.Owned = b.CSV.Spec.CustomResourceDefinitions.Owned[1:]
	var errs int
	for _, r := range validation.DefaultBundleValidators.Validate(validationObjects(b)...) {
		errs += len(r.Errors)
	}
	if errs == 0 {
		t.Error("a CSV without install modes and with an unowned CRD passed validation")
	}
}

func describe(e errors.Error) string {
	if e.Field != "" {
		return e.Field + ": " + e.Error()
	}
	return e.Error()
}

// TestBundleContents checks that the bundle carries what config/ says: every CRD as owned
// with a description, the samples as alm-examples, only AllNamespaces, the generated rules
// as clusterPermissions and the manager Deployment of config/manager.
func TestBundleContents(t *testing.T) {
	o := DefaultBundleOptions
	o.Version, o.Image, o.Replaces = "1.2.3", "registry.example.internal/flotilla:v1.2.3", "flotilla.v1.2.2"
	b, tmp := generateBundle(t, o)
	csv := b.CSV
	if csv.Name != "flotilla.v1.2.3" || csv.Spec.Version.String() != "1.2.3" || csv.Spec.Replaces != o.Replaces {
		t.Errorf("CSV %s version %s replaces %s", csv.Name, csv.Spec.Version, csv.Spec.Replaces)
	}
	if b.Package != "flotilla" || b.DefaultChannel != "candidate" {
		t.Errorf("package %s default channel %s", b.Package, b.DefaultChannel)
	}
	if _, err := os.Stat(filepath.Join(tmp, BundleDockerfile)); err != nil {
		t.Error(err)
	}

	crds := render(t, CRDOverlay)
	if len(b.V1CRDs) != len(crds) || len(csv.Spec.CustomResourceDefinitions.Owned) != len(crds) {
		t.Errorf("bundle: %d CRDs, %d owned; config/crd: %d", len(b.V1CRDs), len(csv.Spec.CustomResourceDefinitions.Owned), len(crds))
	}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		if d.DisplayName == "" || d.Description == "" || d.Kind == "" || d.Version == "" {
			t.Errorf("owned CRD %+v", d)
		}
	}

	var examples []unstructured.Unstructured
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	if len(examples) != len(crds) {
		t.Errorf("%d alm-examples for %d CRDs", len(examples), len(crds))
	}

	var supported []operatorsv1alpha1.InstallModeType
	for _, m := range csv.Spec.InstallModes {
		if m.Supported {
			supported = append(supported, m.Type)
		}
	}
	if !slices.Equal(supported, []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeAllNamespaces}) {
		t.Errorf("supported install modes %v, want AllNamespaces only", supported)
	}

	spec := csv.Spec.InstallStrategy.StrategySpec
	roles, err := ReadGeneratedRoles(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	cluster, _ := roles.GeneratedRules()
	if len(spec.ClusterPermissions) != 1 || spec.ClusterPermissions[0].ServiceAccountName != ManagerServiceAccount {
		t.Fatalf("clusterPermissions %+v", spec.ClusterPermissions)
	}
	if d := DiffAtoms(cluster, spec.ClusterPermissions[0].Rules); d != "" {
		t.Errorf("clusterPermissions differ from %s:\n%s", RolePath, d)
	}
	if len(spec.DeploymentSpecs) != 1 {
		t.Fatalf("%d deployments", len(spec.DeploymentSpecs))
	}
	want := managerDeployment(t, render(t, DefaultOverlay))
	got := spec.DeploymentSpecs[0]
	if got.Name != want.Name {
		t.Errorf("deployment %s, want %s", got.Name, want.Name)
	}
	for i := range want.Spec.Template.Spec.Containers {
		want.Spec.Template.Spec.Containers[i].Image = o.Image
	}
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("CSV deployment differs from config/manager's (-want +got):\n%s", diff)
	}
	if csv.Annotations["containerImage"] != o.Image {
		t.Errorf("containerImage %s", csv.Annotations["containerImage"])
	}
}
