package failover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/jsonpath"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// PreserveState evaluates statePreservation rules against the status the old cluster
// reported for the workload (its aggregated status item), and returns the labels the new
// clusters' objects carry: aliasLabelName → the value the JSONPath selects. A rule whose
// path is invalid, selects nothing or several values, or selects a value that is not a valid
// label value is an error that names the rule: the failover waits rather than lose the state.
func PreserveState(rules []policyv1alpha1.StatePreservationRule, status *runtime.RawExtension) (map[string]string, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	var data any
	if status != nil && len(status.Raw) > 0 {
		if err := json.Unmarshal(status.Raw, &data); err != nil {
			return nil, fmt.Errorf("statePreservation: the reported status is not JSON: %w", err)
		}
	}
	if data == nil {
		return nil, fmt.Errorf("statePreservation: the cluster reported no status to preserve state from")
	}
	out := make(map[string]string, len(rules))
	for i, r := range rules {
		if errs := validation.IsQualifiedName(r.AliasLabelName); len(errs) > 0 {
			return nil, fmt.Errorf("statePreservation rule %d: aliasLabelName %q is not a label key: %s", i, r.AliasLabelName, strings.Join(errs, "; "))
		}
		v, err := evaluate(r.JSONPath, data)
		if err != nil {
			return nil, fmt.Errorf("statePreservation rule %d (%s): %w", i, r.AliasLabelName, err)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("statePreservation rule %d (%s): value %q is not a label value: %s", i, r.AliasLabelName, v, strings.Join(errs, "; "))
		}
		out[r.AliasLabelName] = v
	}
	return out, nil
}

// evaluate runs one JSONPath ("{.jobStatus.jobID}", or the same without braces) and returns
// the one value it selects, as text.
func evaluate(path string, data any) (string, error) {
	p := strings.TrimSpace(path)
	if !strings.HasPrefix(p, "{") {
		p = "{" + p + "}"
	}
	jp := jsonpath.New("statePreservation")
	if err := jp.Parse(p); err != nil {
		return "", fmt.Errorf("jsonPath %q: %w", path, err)
	}
	results, err := jp.FindResults(data)
	if err != nil {
		return "", fmt.Errorf("jsonPath %q: %w", path, err)
	}
	var values []string
	for _, set := range results {
		for _, v := range set {
			if !v.IsValid() || !v.CanInterface() {
				continue
			}
			var b bytes.Buffer
			if err := jp.PrintResults(&b, []reflect.Value{v}); err != nil {
				return "", fmt.Errorf("jsonPath %q: %w", path, err)
			}
			values = append(values, b.String())
		}
	}
	switch len(values) {
	case 0:
		return "", fmt.Errorf("jsonPath %q selects nothing in the reported status", path)
	case 1:
		return values[0], nil
	default:
		return "", fmt.Errorf("jsonPath %q selects %d values; it must select one", path, len(values))
	}
}
