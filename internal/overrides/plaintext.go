package overrides

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// applyPlaintextOverrider applies one JSON patch operation (RFC 6902 add, remove or replace)
// to the object. replace and remove need the path to exist, add needs its parent to; add to
// an array index inserts, and "-" appends. The result must still be a JSON object.
func applyPlaintextOverrider(obj *unstructured.Unstructured, o policyv1alpha1.PlaintextOverrider) error {
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding the object: %w", err)
	}
	patched, err := applyPatchOp(doc, o.Operator, o.Path, o.Value)
	if err != nil {
		return err
	}
	content, err := decodeObject(patched)
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.Operator, o.Path, err)
	}
	obj.Object = content
	return nil
}

// decodeObject decodes a JSON object the way the apiserver's unstructured decoding does:
// whole numbers become int64.
func decodeObject(data []byte) (map[string]any, error) {
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("decoding the result: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the result is %s, not an object", typeName(v))
	}
	return m, nil
}
