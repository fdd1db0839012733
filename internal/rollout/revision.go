package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// A revision is what a template asks members to run: the pruned template without its
// metadata, its status and spec.replicas. Labels, annotations and replica counts are not
// revisions: they reach every cluster at once (a cluster on the stable revision gets them
// with the stable revision's body), so scaling never waits for stages.

// Body returns the part of a pruned template that makes its revision.
func Body(pruned *unstructured.Unstructured) map[string]any {
	body := runtime.DeepCopyJSON(pruned.Object)
	delete(body, "metadata")
	delete(body, "status")
	delete(body, "apiVersion")
	delete(body, "kind")
	if spec, ok := body["spec"].(map[string]any); ok {
		delete(spec, "replicas")
	}
	return body
}

// Revision names a pruned template's revision: a digest of its Body.
func Revision(pruned *unstructured.Unstructured) string {
	return RevisionOfBody(Body(pruned))
}

// RevisionOfBody is the revision of a Body.
func RevisionOfBody(body map[string]any) string {
	data, _ := json.Marshal(body) // maps marshal in key order
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:10]
}

// Compose returns the template a cluster on another revision runs: the current template's
// apiVersion, kind, metadata and spec.replicas with the other revision's body.
func Compose(current *unstructured.Unstructured, body map[string]any) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(body)}
	out.SetAPIVersion(current.GetAPIVersion())
	out.SetKind(current.GetKind())
	if md, ok := current.Object["metadata"]; ok {
		out.Object["metadata"] = runtime.DeepCopyJSONValue(md)
	}
	if st, ok := current.Object["status"]; ok {
		out.Object["status"] = runtime.DeepCopyJSONValue(st)
	}
	if r, found, _ := unstructured.NestedFieldCopy(current.Object, "spec", "replicas"); found {
		_ = unstructured.SetNestedField(out.Object, r, "spec", "replicas")
	}
	return out
}

// WithMaxUnavailable bounds a Deployment's rolling update to n unavailable replicas (its
// share of the fleet's budget). Other kinds, and Deployments that Recreate, are left as
// they are.
func WithMaxUnavailable(obj *unstructured.Unstructured, n int32) {
	if obj.GetKind() != "Deployment" || obj.GroupVersionKind().Group != "apps" {
		return
	}
	if t, _, _ := unstructured.NestedString(obj.Object, "spec", "strategy", "type"); t == "Recreate" {
		return
	}
	_ = unstructured.SetNestedField(obj.Object, int64(n), "spec", "strategy", "rollingUpdate", "maxUnavailable")
	// maxSurge and maxUnavailable may not both be 0: a surge of 0 stays valid with n >= 1.
}
