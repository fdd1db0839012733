package overrides

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// applyMetadataOverrider applies a labelsOverrider (field "labels") or annotationsOverrider
// (field "annotations") to the object's own metadata:
//
//   - add sets every key to its value, whether or not the key exists;
//   - replace sets only the keys that exist and skips the others;
//   - remove deletes the keys (their values are ignored); keys that do not exist are skipped.
//
// Keys, and label values, must be valid for the member apiserver to accept them; an invalid
// one is an error here rather than a rejected apply later.
func applyMetadataOverrider(obj *unstructured.Unstructured, field string, o policyv1alpha1.LabelAnnotationOverrider) error {
	current, _, err := unstructured.NestedStringMap(obj.Object, "metadata", field)
	if err != nil {
		return fmt.Errorf("metadata.%s: %w", field, err)
	}
	if current == nil {
		current = map[string]string{}
	}
	switch o.Operator {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace:
		if err := validateMetadata(field, o.Value); err != nil {
			return err
		}
		for k, v := range o.Value {
			if _, exists := current[k]; exists || o.Operator == policyv1alpha1.OverriderOpAdd {
				current[k] = v
			}
		}
	case policyv1alpha1.OverriderOpRemove:
		for k := range o.Value {
			delete(current, k)
		}
	default:
		return fmt.Errorf("unknown operator %q: must be add, remove or replace", o.Operator)
	}
	if len(current) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", field)
		return nil
	}
	return unstructured.SetNestedStringMap(obj.Object, current, "metadata", field)
}

// validateMetadata checks keys (and label values) in a stable order, so the error is the
// same on every reconcile.
func validateMetadata(field string, kv map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("invalid %s key %q: %s", field, k, strings.Join(errs, "; "))
		}
		if field != "labels" {
			continue
		}
		if errs := validation.IsValidLabelValue(kv[k]); len(errs) > 0 {
			return fmt.Errorf("invalid value %q of label %q: %s", kv[k], k, strings.Join(errs, "; "))
		}
	}
	return nil
}
