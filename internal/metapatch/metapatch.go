// Package metapatch builds the JSON merge patches that set or remove a known set of labels
// and annotations on an object, and nothing else. It is pure: no client.
package metapatch

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keys names the labels and annotations a patch may touch.
type Keys struct {
	Labels, Annotations []string
}

// Patch returns the JSON merge patch that makes obj's labels and annotations named in k
// exactly those of wantLabels and wantAnnotations: a key there with another value (or
// missing) is set, a key not there but present on obj is removed; keys outside k are left
// alone. With lock, the patch holds on obj's resourceVersion, so that a change made since obj
// was read fails it with a conflict. It reports false, and no patch, when nothing differs.
func (k Keys) Patch(obj metav1.Object, wantLabels, wantAnnotations map[string]string, lock bool) ([]byte, bool) {
	labels, annotations := entries(obj.GetLabels(), k.Labels, wantLabels), entries(obj.GetAnnotations(), k.Annotations, wantAnnotations)
	if len(labels) == 0 && len(annotations) == 0 {
		return nil, false
	}
	md := map[string]any{}
	if lock {
		md["resourceVersion"] = obj.GetResourceVersion()
	}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		// Maps of strings and nils always marshal.
		panic(fmt.Sprintf("marshal metadata patch: %v", err))
	}
	return patch, true
}

// entries are the merge-patch entries that bring the keys of have to want.
func entries(have map[string]string, keys []string, want map[string]string) map[string]any {
	out := map[string]any{}
	for _, key := range keys {
		w, ok := want[key]
		_, present := have[key]
		switch {
		case ok && (!present || have[key] != w):
			out[key] = w
		case !ok && present:
			out[key] = nil
		}
	}
	return out
}
