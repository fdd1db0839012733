package detector

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrimTemplateMetadata(t *testing.T) {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web",
		Labels:        map[string]string{"app": "web"},
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"Deployment"}`, "team": "web"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	before := metadataFingerprint(m)
	out, err := trimTemplateMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*metav1.PartialObjectMetadata)
	if got.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", got.ManagedFields)
	}
	if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Errorf("last-applied-configuration kept")
	}
	if got.Annotations["team"] != "web" || got.Labels["app"] != "web" {
		t.Errorf("other labels or annotations dropped: %v %v", got.Labels, got.Annotations)
	}
	// The cached copy and the template read whole have the same fingerprint.
	if after := metadataFingerprint(got); after != before {
		t.Errorf("fingerprint changed with the trim: %s, was %s", after, before)
	}
	got.Annotations["team"] = "data"
	if metadataFingerprint(got) == before {
		t.Errorf("fingerprint blind to an annotation that reaches the members")
	}
	// Nothing to trim: no annotations at all.
	if _, err := trimTemplateMetadata(&metav1.PartialObjectMetadata{}); err != nil {
		t.Fatal(err)
	}
}
