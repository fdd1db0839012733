package overrides

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// applyCommandArgsOverrider applies a commandOverrider (field "command") or argsOverrider
// (field "args") to the container, or init container, of the given name in a built-in
// workload kind:
//
//   - add appends the values, creating the list when the container has none;
//   - remove drops every element equal to one of the values, and the field when none is left.
//
// A container name that the object does not have, and kinds that are not built-in workloads,
// leave the object unchanged: one policy may name containers of several templates.
func applyCommandArgsOverrider(obj *unstructured.Unstructured, field string, o policyv1alpha1.CommandArgsOverrider) error {
	switch o.Operator {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpRemove:
	default:
		return fmt.Errorf("unknown operator %q: must be add or remove", o.Operator)
	}
	return forEachContainer(obj, func(c map[string]any, path string) error {
		if name, _ := c["name"].(string); name != o.ContainerName {
			return nil
		}
		current, err := stringList(c, field)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", path, field, err)
		}
		var next []string
		if o.Operator == policyv1alpha1.OverriderOpAdd {
			next = append(current, o.Value...)
		} else {
			next = slices.DeleteFunc(current, func(s string) bool { return slices.Contains(o.Value, s) })
		}
		if len(next) == 0 {
			delete(c, field)
			return nil
		}
		c[field] = toAnySlice(next)
		return nil
	})
}

// stringList reads an optional list of strings.
func stringList(m map[string]any, field string) ([]string, error) {
	raw, found := m[field]
	if !found || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("is %s, not an array of strings", typeName(raw))
	}
	out := make([]string, 0, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("element %d is %s, not a string", i, typeName(v))
		}
		out = append(out, s)
	}
	return out, nil
}

func toAnySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
