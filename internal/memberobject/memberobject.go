// Package memberobject decides, from a member object as it is and the manifest about to be
// applied, who owns the object and which of its fields Flotilla must leave alone. It is pure:
// no client, no cluster.
package memberobject

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/metapatch"
)

// Ownership is who manages a member object, as seen from this control plane.
type Ownership int

const (
	// Absent: the object does not exist in the member.
	Absent Ownership = iota
	// Ours: this control plane made it (or took it over) for the same template.
	Ours
	// Unmanaged: it exists without the karmada.io/managed label: a user's or another tool's.
	Unmanaged
	// OtherControlPlane: it carries karmada.io/managed, but for another control plane (another
	// host id) or, without a host id, for another template (Karmada, or another Flotilla).
	OtherControlPlane
	// KarmadaLeftover: Karmada made it for the template the manifest was migrated from (its
	// resourcetemplate.karmada.io/uid is the template's flotilla.io/adopt-karmada-uid): it is
	// adopted in place (AdoptionPatch).
	KarmadaLeftover
)

// Owner tells who manages cur, the live member object (nil when absent), for the manifest
// desired that this control plane, whose host id is hostID, wants to apply.
//
// An object is ours when it is labelled karmada.io/managed=true and either names this host
// in flotilla.io/host-id, or names no host and was made from the same template (its
// resourcetemplate.karmada.io/uid is the manifest's: template UIDs are unique across
// clusters, so no other control plane can have made it).
func Owner(cur, desired *unstructured.Unstructured, hostID string) Ownership {
	if cur == nil {
		return Absent
	}
	if cur.GetLabels()[wellknown.ManagedLabel] != wellknown.ManagedLabelValue {
		return Unmanaged
	}
	a := cur.GetAnnotations()
	if host := a[wellknown.HostIDAnnotation]; host != "" {
		if host == hostID {
			return Ours
		}
		return OtherControlPlane
	}
	if uid := desired.GetAnnotations()[wellknown.ResourceTemplateUIDAnnotation]; uid != "" && a[wellknown.ResourceTemplateUIDAnnotation] == uid {
		return Ours
	}
	if uid := desired.GetAnnotations()[wellknown.AdoptKarmadaUIDAnnotation]; uid != "" && a[wellknown.ResourceTemplateUIDAnnotation] == uid {
		return KarmadaLeftover
	}
	return OtherControlPlane
}

// AdoptionPatch returns the JSON merge patch that finishes the adoption of cur, a member
// object Karmada made (KarmadaLeftover) over which desired has just been applied: it removes
// the labels and annotations of Karmada's domains (*karmada.io) that desired does not carry
// (Karmada's permanent ids, managed-labels and managed-annotations lists, policy names), and
// the managedFields entries of Karmada's binaries, so that Flotilla's field manager alone
// owns what the template sets. It holds on cur's resourceVersion. It touches no spec: the
// object keeps its UID and, when the template is Karmada's, its pods. It reports false when
// there is nothing to remove.
func AdoptionPatch(cur, desired *unstructured.Unstructured) ([]byte, bool) {
	md := map[string]any{"resourceVersion": cur.GetResourceVersion()}
	if l := karmadaOnly(cur.GetLabels(), desired.GetLabels()); len(l) > 0 {
		md["labels"] = l
	}
	if a := karmadaOnly(cur.GetAnnotations(), desired.GetAnnotations()); len(a) > 0 {
		md["annotations"] = a
	}
	mf := cur.GetManagedFields()
	kept := make([]metav1.ManagedFieldsEntry, 0, len(mf))
	for _, e := range mf {
		if !strings.HasPrefix(e.Manager, wellknown.KarmadaFieldManagerPrefix) {
			kept = append(kept, e)
		}
	}
	if len(kept) != len(mf) {
		md["managedFields"] = kept
	}
	if len(md) == 1 {
		return nil, false
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		// Maps of strings, nils and managedFields entries always marshal.
		panic(fmt.Sprintf("marshal adoption patch: %v", err))
	}
	return patch, true
}

// karmadaOnly returns merge-patch removals of the keys of have in a Karmada domain (a prefix
// that is karmada.io or ends with .karmada.io) that want does not carry.
func karmadaOnly(have, want map[string]string) map[string]any {
	out := map[string]any{}
	for k := range have {
		prefix, _, ok := strings.Cut(k, "/")
		if !ok || (prefix != "karmada.io" && !strings.HasSuffix(prefix, ".karmada.io")) {
			continue
		}
		if _, kept := want[k]; !kept {
			out[k] = nil
		}
	}
	return out
}

// createOnlyResourceVersion is the resourceVersion a create-only apply holds on. The
// apiserver checks an apply's resourceVersion only against an object that exists, and no
// object has this one (the largest etcd revision), so the apply creates the object when it is
// absent and fails with a Conflict, changing nothing, when it exists.
const createOnlyResourceVersion = "9223372036854775807"

// CreateOnly returns a copy of desired that a server-side apply creates when the object does
// not exist and refuses with a Conflict when it does: one request for an object no one made,
// with no window in which an object someone else made since it was looked for is taken over.
func CreateOnly(desired *unstructured.Unstructured) *unstructured.Unstructured {
	out := desired.DeepCopy()
	out.SetResourceVersion(createOnlyResourceVersion)
	return out
}

// WantsOverwrite reports whether the manifest asks to take over an object someone else
// manages (conflictResolution: Overwrite on the policy, or the template's annotation).
func WantsOverwrite(desired *unstructured.Unstructured) bool {
	return desired.GetAnnotations()[wellknown.ConflictResolutionAnnotation] == wellknown.ConflictResolutionOverwrite
}

// ConflictError is a member object that Flotilla must not take over.
type ConflictError struct {
	Kind, Key string
	Owner     Ownership
	// By names the other control plane, when known.
	By string
}

func (e *ConflictError) Error() string {
	how := fmt.Sprintf("set conflictResolution: Overwrite on the policy, or annotate the template %s=%s, to take it over",
		wellknown.ConflictResolutionAnnotation, wellknown.ConflictResolutionOverwrite)
	if e.Owner == OtherControlPlane {
		return fmt.Sprintf("conflict: %s %s in the member cluster is managed by another control plane (%s); %s",
			e.Kind, e.Key, e.By, how)
	}
	return fmt.Sprintf("conflict: %s %s already exists in the member cluster and is not managed by Flotilla (no label %s=%s); %s",
		e.Kind, e.Key, wellknown.ManagedLabel, wellknown.ManagedLabelValue, how)
}

// CheckConflict returns a *ConflictError when desired may not be applied over cur.
func CheckConflict(cur, desired *unstructured.Unstructured, hostID string) error {
	o := Owner(cur, desired, hostID)
	if o == Absent || o == Ours || o == KarmadaLeftover || WantsOverwrite(desired) {
		return nil
	}
	e := &ConflictError{Kind: desired.GetKind(), Key: client.ObjectKeyFromObject(desired).String(), Owner: o}
	if o == OtherControlPlane {
		a := cur.GetAnnotations()
		switch {
		case a[wellknown.HostIDAnnotation] != "":
			e.By = "host id " + a[wellknown.HostIDAnnotation]
		case a[wellknown.ResourceTemplateUIDAnnotation] != "":
			e.By = "template uid " + a[wellknown.ResourceTemplateUIDAnnotation]
		default:
			e.By = "no host id or template uid recorded"
		}
	}
	return e
}

// MayDelete reports whether the object a Work made may be deleted when the Work goes: it is
// still ours and still that Work's.
func MayDelete(cur, manifest *unstructured.Unstructured, hostID string) bool {
	if Owner(cur, manifest, hostID) != Ours {
		return false
	}
	return cur.GetAnnotations()[wellknown.WorkNameAnnotation] == manifest.GetAnnotations()[wellknown.WorkNameAnnotation]
}

// Autoscaler returns the name of the first of hpas, the member's HorizontalPodAutoscalers
// (autoscaling/v1 or v2, read as unstructured), whose scaleTargetRef is obj: the same API
// group (any version), kind and name, in obj's namespace. While one exists the replicas of
// obj are the HPA's (or KEDA's, which works through an HPA) and Flotilla keeps the member's;
// with none, replicas set in the member by anyone else (`kubectl scale`) are drift. It
// returns "" when no HPA scales obj, and skips HPAs whose scaleTargetRef cannot be read.
func Autoscaler(obj *unstructured.Unstructured, hpas []unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	for i := range hpas {
		h := &hpas[i]
		if h.GetNamespace() != obj.GetNamespace() {
			continue
		}
		target, name, ok := ScaleTarget(h)
		if ok && name == obj.GetName() && target == gk {
			return h.GetName()
		}
	}
	return ""
}

// ScaleTarget returns the API group and kind, and the name, of the object an HPA scales
// (its spec.scaleTargetRef); ok is false when the reference is missing or malformed.
func ScaleTarget(hpa *unstructured.Unstructured) (gk schema.GroupKind, name string, ok bool) {
	ref, found, err := unstructured.NestedStringMap(hpa.Object, "spec", "scaleTargetRef")
	if !found || err != nil || ref["kind"] == "" || ref["name"] == "" {
		return schema.GroupKind{}, "", false
	}
	gv, err := schema.ParseGroupVersion(ref["apiVersion"])
	if err != nil {
		return schema.GroupKind{}, "", false
	}
	return schema.GroupKind{Group: gv.Group, Kind: ref["kind"]}, ref["name"], true
}

// Replicas returns spec.replicas and whether it is set as an integer.
func Replicas(obj *unstructured.Unstructured) (int64, bool) {
	if obj == nil {
		return 0, false
	}
	n, ok, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	return n, ok && err == nil
}

// released names the labels and annotations that mark a member object as managed by a
// control plane and tie it to a template, a policy, a binding or a Work. Releasing an object
// removes them; the template's own labels and annotations, and what overrides added, stay.
var released = metapatch.Keys{
	Labels: []string{
		wellknown.ManagedLabel,
		wellknown.PropagationPolicyPermanentIDLabel,
		wellknown.ClusterPropagationPolicyPermanentIDLabel,
		wellknown.ResourceBindingPermanentIDLabel,
		wellknown.ClusterResourceBindingPermanentIDLabel,
		wellknown.WorkPermanentIDLabel,
	},
	Annotations: []string{
		wellknown.HostIDAnnotation,
		wellknown.AppliedDigestAnnotation,
		wellknown.WorkNamespaceAnnotation,
		wellknown.WorkNameAnnotation,
		wellknown.ResourceTemplateUIDAnnotation,
		wellknown.ResourceTemplateGenerationAnnotation,
		wellknown.ConflictResolutionAnnotation,
		wellknown.PropagationPolicyNamespaceAnnotation,
		wellknown.PropagationPolicyNameAnnotation,
		wellknown.ClusterPropagationPolicyNameAnnotation,
		wellknown.ResourceBindingNamespaceAnnotation,
		wellknown.ResourceBindingNameAnnotation,
		wellknown.ClusterResourceBindingNameAnnotation,
	},
}

// ReleasePatch returns the JSON merge patch that releases cur, a member object a preserving
// Work leaves behind, to the member: it removes the labels and annotations that mark it as
// managed (as Karmada does), and holds on cur's resourceVersion, so that a change made since
// it was read fails the patch with a conflict instead of being released unseen. It reports
// false, and no patch, when cur carries none of them.
func ReleasePatch(cur *unstructured.Unstructured) ([]byte, bool) {
	return released.Patch(cur, nil, nil, true)
}
