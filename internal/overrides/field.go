package overrides

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// fieldOp is a JSON or YAML sub-patch operation.
type fieldOp struct {
	subPath  string
	operator policyv1alpha1.OverriderOperator
	value    apiextensionsv1.JSON
}

// applyFieldOverrider patches the JSON or YAML document held in the string field at
// fieldPath (a ConfigMap key, say). The field must exist and be a string. Its content is
// parsed, the operations are applied in order as JSON patch operations on subPaths, and the
// result is written back in the same language: JSON compact, YAML with sorted keys. Comments,
// key order and layout of the original are not kept. A YAML field must hold one document.
func applyFieldOverrider(obj *unstructured.Unstructured, o policyv1alpha1.FieldOverrider) error {
	ops, lang, err := fieldOps(o)
	if err != nil {
		return err
	}
	p, err := parsePointer(o.FieldPath)
	if err != nil {
		return fmt.Errorf("fieldPath: %w", err)
	}
	v, err := p.get(obj.Object)
	if err != nil {
		return fmt.Errorf("fieldPath: %w", err)
	}
	content, ok := v.(string)
	if !ok {
		return fmt.Errorf("fieldPath %s is %s, not a string holding %s", o.FieldPath, typeName(v), lang)
	}
	doc, err := toJSON(lang, content)
	if err != nil {
		return fmt.Errorf("fieldPath %s: %w", o.FieldPath, err)
	}
	for i, op := range ops {
		if doc, err = applyPatchOp(doc, op.operator, op.subPath, op.value); err != nil {
			return fmt.Errorf("%s[%d]: %w", lang, i, err)
		}
	}
	out, err := fromJSON(lang, doc)
	if err != nil {
		return fmt.Errorf("fieldPath %s: %w", o.FieldPath, err)
	}
	return p.replace(obj.Object, out)
}

// fieldOps returns the operations of a fieldOverrider and their language, "json" or "yaml".
func fieldOps(o policyv1alpha1.FieldOverrider) ([]fieldOp, string, error) {
	switch {
	case len(o.JSON) > 0 && len(o.YAML) > 0:
		return nil, "", errors.New("set exactly one of json and yaml, not both")
	case len(o.JSON) > 0:
		ops := make([]fieldOp, len(o.JSON))
		for i, op := range o.JSON {
			ops[i] = fieldOp{op.SubPath, op.Operator, op.Value}
		}
		return ops, "json", nil
	case len(o.YAML) > 0:
		ops := make([]fieldOp, len(o.YAML))
		for i, op := range o.YAML {
			ops[i] = fieldOp{op.SubPath, op.Operator, op.Value}
		}
		return ops, "yaml", nil
	}
	return nil, "", errors.New("set exactly one of json and yaml")
}

// toJSON parses the field content into a JSON document.
func toJSON(lang, content string) ([]byte, error) {
	if lang == "json" {
		if !json.Valid([]byte(content)) {
			return nil, errors.New("content is not valid JSON")
		}
		return []byte(content), nil
	}
	doc, err := singleYAMLDocument(content)
	if err != nil {
		return nil, err
	}
	out, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("content is not valid YAML: %w", err)
	}
	return out, nil
}

// singleYAMLDocument returns the one document in content. Empty and comment-only documents
// do not count; more than one document is an error, since only one could be written back.
func singleYAMLDocument(content string) ([]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(content)))
	var found []byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("content is not valid YAML: %w", err)
		}
		if isEmptyYAML(doc) {
			continue
		}
		if found != nil {
			return nil, errors.New("content holds more than one YAML document")
		}
		found = doc
	}
	if found == nil {
		return []byte{}, nil
	}
	return found, nil
}

// isEmptyYAML reports whether a document has only blank lines, comments and separators.
func isEmptyYAML(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			return false
		}
	}
	return true
}

// fromJSON writes a patched JSON document back in the field's language.
func fromJSON(lang string, doc []byte) (string, error) {
	if lang == "json" {
		var b bytes.Buffer
		if err := json.Compact(&b, doc); err != nil {
			return "", fmt.Errorf("encoding the result: %w", err)
		}
		return b.String(), nil
	}
	out, err := yaml.JSONToYAML(doc)
	if err != nil {
		return "", fmt.Errorf("encoding the result as YAML: %w", err)
	}
	return string(out), nil
}
