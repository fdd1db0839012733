package deploy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RenderChart renders the chart in dir as `helm template --include-crds` would for a release
// named release in namespace, with values merged over the chart's values.yaml (and checked
// against its values.schema.json). CRDs come first, then the templates in file name order.
func RenderChart(dir, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	if err := chrt.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	if values == nil {
		values = map[string]any{}
	}
	vals, err := util.ToRenderValues(chrt, values,
		common.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("chart %s values: %w", dir, err)
	}
	rendered, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", dir, err)
	}

	var objs []*unstructured.Unstructured
	for _, f := range chrt.CRDObjects() {
		o, err := DecodeObjects(f.File.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Filename, err)
		}
		objs = append(objs, o...)
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") || strings.HasPrefix(filepath.Base(name), "_") {
			continue
		}
		o, err := DecodeObjects([]byte(rendered[name]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", name, err, rendered[name])
		}
		objs = append(objs, o...)
	}
	return objs, nil
}
