package migrate

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// claimPrefixes are the label and annotation prefixes of Karmada's claim on a template or of a
// policy's permanent id: a copy carries none of them (Flotilla puts the claim on the binding
// and gives each policy its own id).
var claimPrefixes = []string{"propagationpolicy.karmada.io/", "clusterpropagationpolicy.karmada.io/"}

// Copy returns what the host gets of obj, an object read from the Karmada control plane: its
// apiVersion, kind, namespace, name, labels, annotations and content, without what the Karmada
// apiserver gave it (uid, resourceVersion, generation, creation time, managedFields, owner
// references, finalizers, status) and without Karmada's claim keys. It does not change obj.
func Copy(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	md, _ := out.Object["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
		"ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName"} {
		delete(md, k)
	}
	out.SetLabels(withoutClaim(out.GetLabels()))
	out.SetAnnotations(withoutClaim(out.GetAnnotations()))
	return out
}

// Template returns the host copy of a resource template Karmada propagates: Copy, annotated
// with the template's UID in Karmada so that the member objects Karmada made for it are
// adopted in place (wellknown.AdoptKarmadaUIDAnnotation).
func Template(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := Copy(obj)
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[wellknown.AdoptKarmadaUIDAnnotation] = string(obj.GetUID())
	out.SetAnnotations(ann)
	return out
}

// withoutClaim returns m without the keys of claimPrefixes (nil when nothing is left).
func withoutClaim(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		claim := false
		for _, p := range claimPrefixes {
			if strings.HasPrefix(k, p) {
				claim = true
			}
		}
		if !claim {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Same reports whether cur, an object in the host, already holds what want (a Copy or
// Template) carries: the same content (every top-level field but metadata and status) and
// want's labels and annotations with the same values. What the host or Flotilla added to cur
// (status, its own labels) does not make a difference.
func Same(cur, want *unstructured.Unstructured) bool {
	for k, v := range want.Object {
		if k == "metadata" || k == "status" {
			continue
		}
		if !equality.Semantic.DeepEqual(cur.Object[k], v) {
			return false
		}
	}
	for k := range cur.Object {
		if _, ok := want.Object[k]; !ok && k != "metadata" && k != "status" {
			return false
		}
	}
	return contains(cur.GetLabels(), want.GetLabels()) && contains(cur.GetAnnotations(), want.GetAnnotations())
}

func contains(have, want map[string]string) bool {
	for k, v := range want {
		if h, ok := have[k]; !ok || h != v {
			return false
		}
	}
	return true
}
