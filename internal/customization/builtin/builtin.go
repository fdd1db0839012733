// Package builtin holds the ResourceInterpreterCustomizations Flotilla ships for popular
// third-party kinds (OpenKruise, Argo, Flux, Kubeflow, Volcano, Flink, Ray, Spark and
// Kyverno), written by us from each project's CRD semantics, and puts them in use at the
// lowest precedence (customization.Store.ApplyBuiltin): for each operation of a kind, a
// user's customization that scripts it wins.
//
// They are plain Karmada ResourceInterpreterCustomizations, one YAML file per project in this
// directory, embedded in the binary; docs/builtin-interpreters.md lists each kind and its
// operations. A customization that serves one kind in several versions (Flux's sources,
// whose v1beta2 and v1 are both served) names the other versions in the annotation
// builtin.flotilla.io/also-for (comma-separated apiVersions); it is put in use once per
// version, named <name>-<version>.
package builtin

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

//go:embed *.yaml
var files embed.FS

// AlsoFor is the annotation that names further apiVersions a built-in serves.
const AlsoFor = "builtin.flotilla.io/also-for"

// NamePrefix starts the name of every built-in.
const NamePrefix = "flotilla-builtin-"

// Files are the names of the embedded files, sorted.
func Files() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// Customizations returns every built-in, one per kind and version, in file order. The
// error names the file and document of a built-in that does not parse.
func Customizations() ([]*configv1alpha1.ResourceInterpreterCustomization, error) {
	var out []*configv1alpha1.ResourceInterpreterCustomization
	for _, name := range Files() {
		raw, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		rics, err := Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, rics...)
	}
	return out, nil
}

// Parse reads the customizations of a YAML stream in the format of this package's files:
// ResourceInterpreterCustomizations, strictly (an unknown field is an error), each copied
// for the apiVersions its annotation AlsoFor names.
func Parse(raw []byte) ([]*configv1alpha1.ResourceInterpreterCustomization, error) {
	var out []*configv1alpha1.ResourceInterpreterCustomization
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		ric := &configv1alpha1.ResourceInterpreterCustomization{}
		if err := yaml.UnmarshalStrict(doc, ric); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if err := check(ric); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", n, ric.Name, err)
		}
		out = append(out, ric)
		also := ric.Annotations[AlsoFor]
		for _, apiVersion := range strings.Split(also, ",") {
			if apiVersion = strings.TrimSpace(apiVersion); apiVersion == "" {
				continue
			}
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil || gv.Version == "" {
				return nil, fmt.Errorf("document %d (%s): annotation %s: bad apiVersion %q", n, ric.Name, AlsoFor, apiVersion)
			}
			c := ric.DeepCopy()
			c.Name = ric.Name + "-" + gv.Version
			c.Spec.Target.APIVersion = apiVersion
			out = append(out, c)
		}
	}
}

func check(ric *configv1alpha1.ResourceInterpreterCustomization) error {
	switch {
	case ric.APIVersion != configv1alpha1.GroupVersion.String() || ric.Kind != "ResourceInterpreterCustomization":
		return fmt.Errorf("%s %s is not a ResourceInterpreterCustomization", ric.APIVersion, ric.Kind)
	case !strings.HasPrefix(ric.Name, NamePrefix):
		return fmt.Errorf("the name does not start with %s", NamePrefix)
	case ric.Spec.Target.APIVersion == "" || ric.Spec.Target.Kind == "":
		return errors.New("no target")
	}
	return nil
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// Store is where built-ins are put in use: customization.Store.
type Store interface {
	ApplyBuiltin(ric *configv1alpha1.ResourceInterpreterCustomization) error
}

// Load puts every built-in in use in store, at the lowest precedence. An error (a built-in
// that does not parse or compile, which the package's tests rule out) names it; the others
// are in use nonetheless.
func Load(store Store) error {
	if store == nil {
		return errors.New("built-in customizations: no store")
	}
	rics, err := Customizations()
	if err != nil {
		return fmt.Errorf("built-in customizations: %w", err)
	}
	var errs []error
	for _, ric := range rics {
		if err := store.ApplyBuiltin(ric); err != nil {
			errs = append(errs, fmt.Errorf("built-in %w", err))
		}
	}
	return errors.Join(errs...)
}
