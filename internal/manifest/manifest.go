// Package manifest reads multi-document YAML files and applies them with server-side apply,
// as `kubectl apply --server-side` does. The demo and the tests use it to play scenarios.
package manifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Read decodes every non-empty document of a YAML or JSON file.
func Read(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// ApplyFile server-side applies every object of the file as fieldOwner.
func ApplyFile(ctx context.Context, c client.Client, path, fieldOwner string) ([]*unstructured.Unstructured, error) {
	objs, err := Read(path)
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("%s: apply %s %s: %w", path, u.GetKind(), u.GetName(), err)
		}
	}
	return objs, nil
}
