package interpreter

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The readers below never panic on odd input: a field of the wrong type is an error that
// names the field, never a silent zero.

// nestedInt64 reads an optional integer field. Whole float64 values (from a JSON decoder that
// does not keep integers apart) are accepted.
func nestedInt64(obj map[string]any, path ...string) (int64, bool, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found || v == nil {
		return 0, false, wrapPath(err, path)
	}
	switch n := v.(type) {
	case int64:
		return n, true, nil
	case int:
		return int64(n), true, nil
	case int32:
		return int64(n), true, nil
	case float64:
		if n == math.Trunc(n) && n >= math.MinInt64 && n < math.MaxInt64 {
			return int64(n), true, nil
		}
	}
	return 0, false, fmt.Errorf("%s: want an integer, got %s", strings.Join(path, "."), describe(v))
}

// nestedCount reads an optional integer field that must fit in an int32 and not be negative:
// replica counts and the like.
func nestedCount(obj map[string]any, path ...string) (int32, bool, error) {
	n, found, err := nestedInt64(obj, path...)
	if err != nil || !found {
		return 0, found, err
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, false, fmt.Errorf("%s: %d is out of range [0, %d]", strings.Join(path, "."), n, math.MaxInt32)
	}
	return int32(n), true, nil
}

// nestedString reads an optional string field.
func nestedString(obj map[string]any, path ...string) (string, bool, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found || v == nil {
		return "", false, wrapPath(err, path)
	}
	s, ok := v.(string)
	if !ok {
		return "", false, fmt.Errorf("%s: want a string, got %s", strings.Join(path, "."), describe(v))
	}
	return s, true, nil
}

// nestedMap reads an optional object field.
func nestedMap(obj map[string]any, path ...string) (map[string]any, bool, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found || v == nil {
		return nil, false, wrapPath(err, path)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("%s: want an object, got %s", strings.Join(path, "."), describe(v))
	}
	return m, true, nil
}

// nestedSlice reads an optional list field.
func nestedSlice(obj map[string]any, path ...string) ([]any, bool, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found || v == nil {
		return nil, false, wrapPath(err, path)
	}
	s, ok := v.([]any)
	if !ok {
		return nil, false, fmt.Errorf("%s: want a list, got %s", strings.Join(path, "."), describe(v))
	}
	return s, true, nil
}

// wrapPath names the field in an accessor error (a parent that is not an object).
func wrapPath(err error, path []string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
}

// describe names the type of a value from an unstructured object.
func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, float32, float64:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}
