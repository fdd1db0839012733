// Package deploy renders and generates everything Flotilla ships to install it: the
// kustomize overlays of config/ (dist/install.yaml), the Helm chart's generated parts and the
// OLM bundle. config/ is the single source of truth: the CRDs and the ClusterRole there are
// generated from the Go types and the +kubebuilder:rbac markers by `make manifests`, and
// everything else is derived from config/ by this package, never copied by hand.
//
// hack/deploygen is its command line; the tests in this package and in test/install check
// that the three install paths agree.
package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/filters/imagetag"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Paths of the sources, relative to the repository root.
const (
	// DefaultOverlay is what `kubectl apply -k` installs and dist/install.yaml holds.
	DefaultOverlay = "config/default"
	// CRDOverlay holds the CRDs only.
	CRDOverlay = "config/crd"
	// ManifestsOverlay is the source of the OLM bundle.
	ManifestsOverlay = "config/manifests"
	// RolePath is the ClusterRole generated from the +kubebuilder:rbac markers.
	RolePath = "config/rbac/role.yaml"
	// ChartDir is the Helm chart.
	ChartDir = "charts/flotilla"
	// BundleDir is the OLM bundle.
	BundleDir = "bundle"
)

// Names shared by every install path.
const (
	// Namespace is where the manager runs.
	Namespace = "flotilla-system"
	// ManagerDeployment is the manager's Deployment.
	ManagerDeployment = "flotilla-controller-manager"
	// ManagerContainer is the manager's container in it.
	ManagerContainer = "manager"
	// ManagerServiceAccount is the identity the manager runs as.
	ManagerServiceAccount = "flotilla-manager"
	// DefaultImageRepository is the manager's image without its tag.
	DefaultImageRepository = "ghcr.io/flotilla-io/flotilla"
)

// Render runs kustomize on the overlay dir (as `kubectl kustomize dir` does, with kustomize's
// legacy resource order: namespaces and CRDs first) and returns the result.
func Render(dir string) (resmap.ResMap, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return m, nil
}

// RenderObjects renders the overlay dir into objects, in kustomize's order.
func RenderObjects(dir string) ([]*unstructured.Unstructured, error) {
	m, err := Render(dir)
	if err != nil {
		return nil, err
	}
	return objectsOf(m)
}

func objectsOf(m resmap.ResMap) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		// Through JSON, so that numbers are int64 or float64 as everywhere in unstructured.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// Installer renders config/default under root into one multi-document YAML, as
// dist/install.yaml. A non-empty image replaces the manager's image (repository:tag).
func Installer(root, image string) ([]byte, error) {
	m, err := Render(filepath.Join(root, DefaultOverlay))
	if err != nil {
		return nil, err
	}
	if image != "" {
		if err := SetImage(m, image); err != nil {
			return nil, err
		}
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	return append([]byte(installerHeader), out...), nil
}

const installerHeader = `# Flotilla: everything a host cluster needs (namespace, CRDs, RBAC, manager).
# Generated from config/default by hack/deploygen (make build-installer). DO NOT EDIT.
# Install: kubectl apply --server-side -f install.yaml
---
`

// SetImage points every container that runs the manager image (DefaultImageRepository,
// whatever its tag) at image, as the images field of a kustomization would.
func SetImage(m resmap.ResMap, image string) error {
	repo, tag, digest := splitImage(image)
	if repo == "" {
		return fmt.Errorf("invalid image %q", image)
	}
	return m.ApplyFilter(imagetag.LegacyFilter{ImageTag: types.Image{
		Name: DefaultImageRepository, NewName: repo, NewTag: tag, Digest: digest,
	}})
}

// splitImage splits an image reference into repository, tag and digest.
func splitImage(image string) (repo, tag, digest string) {
	repo = image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo, digest = repo[:i], repo[i+1:]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	return repo, tag, digest
}

// DecodeObjects reads every object of a multi-document YAML stream; empty documents are
// skipped. Numbers are int64 or float64, as in objects read from an apiserver.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, err
		}
		objs = append(objs, u)
	}
}

// Find returns the first object of kind and name, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// OfKind returns the objects of kind, in order.
func OfKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Into converts an object into a typed value.
func Into(obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, into, true); err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}
