package overrides

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// patchOptions are strict RFC 6902: no negative array indices, no parents created on add,
// no silent remove of a missing path. HTML characters are kept as they are, since patched
// field content is written back verbatim.
func patchOptions() *jsonpatch.ApplyOptions {
	o := jsonpatch.NewApplyOptions()
	o.SupportNegativeIndices = false
	o.EnsurePathExistsOnAdd = false
	o.AllowMissingPathOnRemove = false
	o.EscapeHTML = false
	return o
}

// patchOp is one RFC 6902 operation as JSON.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// applyPatchOp applies one add, remove or replace operation to a JSON document. An add or
// replace without a value sets JSON null; remove ignores the value. The path must be a valid
// JSON pointer, and the value valid JSON.
func applyPatchOp(doc []byte, op policyv1alpha1.OverriderOperator, path string, value apiextensionsv1.JSON) (out []byte, err error) {
	if _, err := parsePointer(path); err != nil {
		return nil, err
	}
	p := patchOp{Op: string(op), Path: path}
	switch op {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace:
		p.Value = json.RawMessage("null")
		if len(value.Raw) > 0 {
			if !json.Valid(value.Raw) {
				return nil, fmt.Errorf("value %q is not valid JSON", truncate(string(value.Raw), 64))
			}
			p.Value = json.RawMessage(value.Raw)
		}
	case policyv1alpha1.OverriderOpRemove:
	default:
		return nil, fmt.Errorf("unknown operator %q: must be add, remove or replace", op)
	}
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false) // a value is written into the document as it is
	if err := enc.Encode([]patchOp{p}); err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	patch, err := jsonpatch.DecodePatch(raw.Bytes())
	if err != nil {
		return nil, fmt.Errorf("decoding the patch: %w", err)
	}
	// The patch library is third-party code fed user input: a panic in it must fail this one
	// override, not the controller.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%s %s: json patch failed: %v", op, path, r)
		}
	}()
	out, err = patch.ApplyWithOptions(doc, patchOptions())
	if err != nil {
		return nil, describePatchError(op, path, err)
	}
	return out, nil
}

// describePatchError turns the patch library's errors into messages a policy author can act
// on.
func describePatchError(op policyv1alpha1.OverriderOperator, path string, err error) error {
	switch {
	case errors.Is(err, jsonpatch.ErrMissing) && op == policyv1alpha1.OverriderOpAdd:
		return fmt.Errorf("add %s: the parent of the path does not exist", path)
	case errors.Is(err, jsonpatch.ErrMissing):
		return fmt.Errorf("%s %s: the path does not exist", op, path)
	case errors.Is(err, jsonpatch.ErrInvalidIndex):
		return fmt.Errorf("%s %s: array index out of range", op, path)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
