package memberobject

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

const host = "host-a"

func obj(labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("ns")
	u.SetName("web")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

var managed = map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue}

func TestOwner(t *testing.T) {
	desired := obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "uid-1", wellknown.WorkNameAnnotation: "w"})
	for _, tc := range []struct {
		name string
		cur  *unstructured.Unstructured
		want Ownership
	}{
		{"absent", nil, Absent},
		{"no managed label", obj(nil, nil), Unmanaged},
		{"managed label false", obj(map[string]string{wellknown.ManagedLabel: "false"}, nil), Unmanaged},
		{"our host id", obj(managed, map[string]string{wellknown.HostIDAnnotation: host}), Ours},
		{"our host id, other template", obj(managed, map[string]string{wellknown.HostIDAnnotation: host, wellknown.ResourceTemplateUIDAnnotation: "uid-2"}), Ours},
		{"another host id", obj(managed, map[string]string{wellknown.HostIDAnnotation: "host-b", wellknown.ResourceTemplateUIDAnnotation: "uid-1"}), OtherControlPlane},
		{"no host id, same template (made before host ids)", obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "uid-1"}), Ours},
		{"no host id, other template (Karmada)", obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "uid-9"}), OtherControlPlane},
		{"no host id, no template uid", obj(managed, nil), OtherControlPlane},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Owner(tc.cur, desired, host); got != tc.want {
				t.Errorf("Owner = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckConflict(t *testing.T) {
	desired := obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "uid-1"})
	overwrite := obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "uid-1",
		wellknown.ConflictResolutionAnnotation: wellknown.ConflictResolutionOverwrite})

	var c *ConflictError
	err := CheckConflict(obj(nil, nil), desired, host)
	if !errors.As(err, &c) || c.Owner != Unmanaged || !strings.Contains(err.Error(), "not managed by Flotilla") {
		t.Fatalf("unmanaged object: got %v", err)
	}
	other := obj(managed, map[string]string{wellknown.HostIDAnnotation: "host-b"})
	err = CheckConflict(other, desired, host)
	if !errors.As(err, &c) || c.Owner != OtherControlPlane || !strings.Contains(err.Error(), "another control plane (host id host-b)") ||
		!strings.Contains(err.Error(), "conflictResolution: Overwrite") {
		t.Fatalf("other control plane: got %v", err)
	}
	for _, cur := range []*unstructured.Unstructured{obj(nil, nil), other} {
		if err := CheckConflict(cur, overwrite, host); err != nil {
			t.Errorf("Overwrite must take over %v: %v", cur.GetAnnotations(), err)
		}
	}
	if err := CheckConflict(nil, desired, host); err != nil {
		t.Errorf("absent object: %v", err)
	}
}

func TestMayDelete(t *testing.T) {
	manifest := obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "uid-1", wellknown.WorkNameAnnotation: "w"})
	ours := obj(managed, map[string]string{wellknown.HostIDAnnotation: host, wellknown.WorkNameAnnotation: "w"})
	if !MayDelete(ours, manifest, host) {
		t.Error("our object of this Work must be deletable")
	}
	otherWork := obj(managed, map[string]string{wellknown.HostIDAnnotation: host, wellknown.WorkNameAnnotation: "w2"})
	if MayDelete(otherWork, manifest, host) {
		t.Error("an object now of another Work must be kept")
	}
	otherHost := obj(managed, map[string]string{wellknown.HostIDAnnotation: "host-b", wellknown.WorkNameAnnotation: "w"})
	if MayDelete(otherHost, manifest, host) {
		t.Error("another control plane's object must be kept")
	}
}

// A released object keeps everything but what ties it to the control plane, and the patch
// holds on the version read.
func TestReleasePatch(t *testing.T) {
	cur := obj(map[string]string{
		wellknown.ManagedLabel:                      wellknown.ManagedLabelValue,
		wellknown.PropagationPolicyPermanentIDLabel: "pp-id",
		"app":                   "web",
		"override.example/zone": "a",
	}, map[string]string{
		wellknown.HostIDAnnotation:                     host,
		wellknown.AppliedDigestAnnotation:              "0123",
		wellknown.WorkNamespaceAnnotation:              "karmada-es-member1",
		wellknown.WorkNameAnnotation:                   "w",
		wellknown.ResourceTemplateUIDAnnotation:        "uid-1",
		wellknown.ResourceTemplateGenerationAnnotation: "3",
		wellknown.ConflictResolutionAnnotation:         wellknown.ConflictResolutionOverwrite,
		wellknown.PropagationPolicyNameAnnotation:      "pp",
		wellknown.PropagationPolicyNamespaceAnnotation: "ns",
		"note": "mine",
	})
	cur.SetResourceVersion("42")
	patch, ok := ReleasePatch(cur)
	if !ok {
		t.Fatal("a managed object must be released")
	}
	// What the patch does to an object is metapatch's to test; here, what it removes.
	var got struct {
		Metadata struct {
			ResourceVersion string             `json:"resourceVersion"`
			Labels          map[string]*string `json:"labels"`
			Annotations     map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	removed := func(m map[string]*string) []string {
		var out []string
		for k, v := range m {
			if v != nil {
				t.Errorf("patch %s sets %s: a release only removes", patch, k)
			}
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if want := []string{wellknown.ManagedLabel, wellknown.PropagationPolicyPermanentIDLabel}; !slices.Equal(removed(got.Metadata.Labels), want) {
		t.Errorf("labels removed = %v, want %v", removed(got.Metadata.Labels), want)
	}
	wantAnnotations := []string{wellknown.HostIDAnnotation, wellknown.AppliedDigestAnnotation, wellknown.WorkNamespaceAnnotation, wellknown.WorkNameAnnotation,
		wellknown.ResourceTemplateUIDAnnotation, wellknown.ResourceTemplateGenerationAnnotation, wellknown.ConflictResolutionAnnotation,
		wellknown.PropagationPolicyNameAnnotation, wellknown.PropagationPolicyNamespaceAnnotation}
	slices.Sort(wantAnnotations)
	if !slices.Equal(removed(got.Metadata.Annotations), wantAnnotations) {
		t.Errorf("annotations removed = %v, want %v", removed(got.Metadata.Annotations), wantAnnotations)
	}
	if got.Metadata.ResourceVersion != "42" {
		t.Errorf("the patch must hold on the resourceVersion read: %s", patch)
	}
	// Released as the patch says, the object is the member's to a template that comes back.
	rel := obj(map[string]string{"app": "web"}, map[string]string{"note": "mine"})
	if Owner(rel, obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "uid-1"}), host) != Unmanaged {
		t.Error("a released object must be the member's (unmanaged) to a template that comes back")
	}

	if p, ok := ReleasePatch(obj(map[string]string{"app": "web"}, nil)); ok {
		t.Errorf("nothing to release, got patch %s", p)
	}
}

func TestAutoscaler(t *testing.T) {
	hpa := func(ns, name, apiVersion, kind, target string) unstructured.Unstructured {
		h := unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
			"metadata": map[string]any{"namespace": ns, "name": name},
			"spec":     map[string]any{"scaleTargetRef": map[string]any{"apiVersion": apiVersion, "kind": kind, "name": target}},
		}}
		return h
	}
	web := &unstructured.Unstructured{}
	web.SetAPIVersion("apps/v1")
	web.SetKind("Deployment")
	web.SetNamespace("shop")
	web.SetName("web")
	malformed := hpa("shop", "bad", "apps/v1/extra", "Deployment", "web")
	noRef := unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "shop", "name": "empty"}}}
	wrongType := unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "shop", "name": "odd"},
		"spec": map[string]any{"scaleTargetRef": "web"}}}
	for _, tc := range []struct {
		name string
		hpas []unstructured.Unstructured
		want string
	}{
		{"none", nil, ""},
		{"targets it", []unstructured.Unstructured{hpa("shop", "web-hpa", "apps/v1", "Deployment", "web")}, "web-hpa"},
		{"another version of the group", []unstructured.Unstructured{hpa("shop", "old", "apps/v1beta1", "Deployment", "web")}, "old"},
		{"another object", []unstructured.Unstructured{hpa("shop", "api", "apps/v1", "Deployment", "api")}, ""},
		{"another kind of that name", []unstructured.Unstructured{hpa("shop", "sts", "apps/v1", "StatefulSet", "web")}, ""},
		{"another group", []unstructured.Unstructured{hpa("shop", "argo", "argoproj.io/v1alpha1", "Deployment", "web")}, ""},
		{"another namespace", []unstructured.Unstructured{hpa("other", "web-hpa", "apps/v1", "Deployment", "web")}, ""},
		{"malformed references are skipped", []unstructured.Unstructured{malformed, noRef, wrongType, hpa("shop", "good", "apps/v1", "Deployment", "web")}, "good"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Autoscaler(web, tc.hpas); got != tc.want {
				t.Errorf("Autoscaler = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOwnerKarmadaLeftover(t *testing.T) {
	migrated := obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "new-uid", wellknown.AdoptKarmadaUIDAnnotation: "karmada-uid"})
	for _, tc := range []struct {
		name    string
		cur     *unstructured.Unstructured
		desired *unstructured.Unstructured
		want    Ownership
	}{
		{"Karmada's, for the template migrated", obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "karmada-uid"}), migrated, KarmadaLeftover},
		{"Karmada's, for another template", obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "other"}), migrated, OtherControlPlane},
		{"Karmada's, no template uid", obj(managed, nil), migrated, OtherControlPlane},
		{"another Flotilla's, with that uid", obj(managed, map[string]string{wellknown.HostIDAnnotation: "host-b", wellknown.ResourceTemplateUIDAnnotation: "karmada-uid"}), migrated, OtherControlPlane},
		{"unmanaged, with that uid", obj(nil, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "karmada-uid"}), migrated, Unmanaged},
		{"a template not migrated", obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "karmada-uid"}),
			obj(managed, map[string]string{wellknown.ResourceTemplateUIDAnnotation: "new-uid"}), OtherControlPlane},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Owner(tc.cur, tc.desired, host); got != tc.want {
				t.Errorf("Owner = %v, want %v", got, tc.want)
			}
			if err := CheckConflict(tc.cur, tc.desired, host); (err == nil) != (tc.want == KarmadaLeftover || tc.want == Ours) {
				t.Errorf("CheckConflict = %v for %v", err, tc.want)
			}
		})
	}
}

func TestAdoptionPatch(t *testing.T) {
	cur := obj(map[string]string{
		wellknown.ManagedLabel:                      wellknown.ManagedLabelValue,
		"work.karmada.io/permanent-id":              "w-1",
		"resourcebinding.karmada.io/permanent-id":   "rb-1",
		wellknown.PropagationPolicyPermanentIDLabel: "karmada-pp",
		"app":                "web",
		"karmada.io/other":   "x",
		"notkarmada.io/keep": "y",
	}, map[string]string{
		wellknown.ResourceTemplateUIDAnnotation:           "karmada-uid",
		"resourcetemplate.karmada.io/managed-labels":      "app",
		"resourcetemplate.karmada.io/managed-annotations": "",
		wellknown.WorkNameAnnotation:                      "web-123",
		"team":                                            "a",
	})
	cur.SetResourceVersion("42")
	cur.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "karmada-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate},
		{Manager: wellknown.FieldManager, Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
		{Manager: "karmada-agent", Operation: metav1.ManagedFieldsOperationUpdate},
	})
	desired := obj(map[string]string{wellknown.ManagedLabel: wellknown.ManagedLabelValue, "app": "web",
		wellknown.PropagationPolicyPermanentIDLabel: "ours"},
		map[string]string{wellknown.ResourceTemplateUIDAnnotation: "new", wellknown.WorkNameAnnotation: "web-9"})
	raw, ok := AdoptionPatch(cur, desired)
	if !ok {
		t.Fatal("nothing to patch")
	}
	var got struct {
		Metadata struct {
			ResourceVersion string                      `json:"resourceVersion"`
			Labels          map[string]*string          `json:"labels"`
			Annotations     map[string]*string          `json:"annotations"`
			ManagedFields   []metav1.ManagedFieldsEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	md := got.Metadata
	if md.ResourceVersion != "42" {
		t.Errorf("resourceVersion %q", md.ResourceVersion)
	}
	wantGone := func(m map[string]*string, keys ...string) {
		t.Helper()
		if len(m) != len(keys) {
			t.Errorf("removes %v, want exactly %v", slices.Sorted(maps.Keys(m)), keys)
		}
		for _, k := range keys {
			if v, ok := m[k]; !ok || v != nil {
				t.Errorf("%s not removed", k)
			}
		}
	}
	wantGone(md.Labels, "work.karmada.io/permanent-id", "resourcebinding.karmada.io/permanent-id", "karmada.io/other")
	wantGone(md.Annotations, "resourcetemplate.karmada.io/managed-labels", "resourcetemplate.karmada.io/managed-annotations")
	var managers []string
	for _, e := range md.ManagedFields {
		managers = append(managers, e.Manager)
	}
	if !slices.Equal(managers, []string{wellknown.FieldManager, "kube-controller-manager"}) {
		t.Errorf("managedFields kept %v", managers)
	}

	// Adopted already: nothing left to do.
	clean := obj(desired.GetLabels(), desired.GetAnnotations())
	clean.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: wellknown.FieldManager}})
	if p, ok := AdoptionPatch(clean, desired); ok {
		t.Errorf("patch for an adopted object: %s", p)
	}
}

func TestCreateOnly(t *testing.T) {
	desired := obj(managed, nil)
	desired.SetResourceVersion("")
	got := CreateOnly(desired)
	if got.GetResourceVersion() != createOnlyResourceVersion {
		t.Fatalf("resourceVersion = %q, want %q", got.GetResourceVersion(), createOnlyResourceVersion)
	}
	if desired.GetResourceVersion() != "" {
		t.Fatalf("CreateOnly changed its argument: resourceVersion %q", desired.GetResourceVersion())
	}
	// The apiserver parses resourceVersions as unsigned 64-bit numbers: the precondition must
	// be one it accepts, and above any revision etcd hands out (a signed 64-bit number).
	if _, err := strconv.ParseUint(createOnlyResourceVersion, 10, 64); err != nil {
		t.Fatalf("not a resourceVersion the apiserver parses: %v", err)
	}
	if createOnlyResourceVersion != strconv.FormatInt(math.MaxInt64, 10) {
		t.Fatalf("%s is not the largest etcd revision", createOnlyResourceVersion)
	}
	got.SetResourceVersion("")
	if !equality.Semantic.DeepEqual(got, desired) {
		t.Fatalf("CreateOnly changed more than the resourceVersion:\n%v\n%v", got, desired)
	}
}
