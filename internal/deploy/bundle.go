package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// BundleOptions say what bundle to make.
type BundleOptions struct {
	// Package is the OLM package name; the CSV is <Package>.v<Version>.
	Package string
	// Version is the operator's semantic version, without a leading v.
	Version string
	// Image is the manager's image.
	Image string
	// Channels are the channels the bundle is in; DefaultChannel is the package's default.
	Channels       []string
	DefaultChannel string
	// Replaces optionally names the CSV this one upgrades.
	Replaces string
}

// DefaultBundleOptions are the options of `make bundle` without overrides.
var DefaultBundleOptions = BundleOptions{
	Package:        "flotilla",
	Version:        "0.1.0",
	Image:          DefaultImageRepository + ":v0.1.0",
	Channels:       []string{"candidate"},
	DefaultChannel: "candidate",
}

// Paths inside a bundle.
const (
	BundleManifests   = "manifests"
	BundleMetadata    = "metadata"
	BundleAnnotations = "metadata/annotations.yaml"
	// BundleDockerfile is next to the bundle directory, at the repository root, as
	// operator-sdk writes it.
	BundleDockerfile = "bundle.Dockerfile"
)

// GenerateBundle writes the OLM bundle under root (bundle/ and bundle.Dockerfile) from
// config/manifests: the CSV base there, completed with the manager Deployment, its RBAC as
// clusterPermissions, the CRDs as owned CRDs and the samples as alm-examples; the CRDs and
// any other object (the metrics Service) as manifests of their own.
func GenerateBundle(root string, o BundleOptions) error {
	files, err := BundleFiles(root, o)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, BundleDir)
	manifests := map[string][]byte{}
	for name, data := range files {
		if rest, ok := strings.CutPrefix(name, BundleManifests+"/"); ok {
			manifests[rest] = data
		}
	}
	if err := writeDir(filepath.Join(dir, BundleManifests), manifests, ""); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, BundleMetadata), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, BundleAnnotations), files[BundleAnnotations], 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, BundleDockerfile), files[BundleDockerfile], 0o644)
}

// BundleFiles returns the bundle's files by path: manifests/..., metadata/annotations.yaml
// (both relative to bundle/) and bundle.Dockerfile (relative to the root).
func BundleFiles(root string, o BundleOptions) (map[string][]byte, error) {
	if o.Package == "" || o.Version == "" || o.Image == "" || len(o.Channels) == 0 {
		return nil, fmt.Errorf("bundle needs a package, a version, an image and channels")
	}
	if strings.HasPrefix(o.Version, "v") {
		return nil, fmt.Errorf("version %q: give it without the leading v", o.Version)
	}
	if o.DefaultChannel == "" {
		o.DefaultChannel = o.Channels[0]
	}
	if !slices.Contains(o.Channels, o.DefaultChannel) {
		return nil, fmt.Errorf("default channel %q is not one of %v", o.DefaultChannel, o.Channels)
	}

	m, err := Render(filepath.Join(root, ManifestsOverlay))
	if err != nil {
		return nil, err
	}
	if err := SetImage(m, o.Image); err != nil {
		return nil, err
	}
	objs, err := objectsOf(m)
	if err != nil {
		return nil, err
	}

	files := map[string][]byte{}
	var (
		csv      *unstructured.Unstructured
		crds     []*unstructured.Unstructured
		examples []any
		rest     []*unstructured.Unstructured
	)
	crdGroups := map[string]bool{}
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			g, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
			crdGroups[g+"/"+k] = true
		}
	}
	for i, obj := range objs {
		gvk := obj.GroupVersionKind()
		switch {
		case gvk.Kind == "ClusterServiceVersion":
			if csv != nil {
				return nil, fmt.Errorf("%s holds two ClusterServiceVersions", ManifestsOverlay)
			}
			csv = obj
		case gvk.Kind == "CustomResourceDefinition":
			crds = append(crds, obj)
			data, err := m.Resources()[i].AsYAML()
			if err != nil {
				return nil, err
			}
			group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
			files[BundleManifests+"/"+group+"_"+plural+".yaml"] = data
		case crdGroups[gvk.Group+"/"+gvk.Kind]:
			examples = append(examples, obj.Object)
		case gvk.Kind == "Namespace":
			// OLM installs into the namespace of the OperatorGroup.
		case gvk.Group == rbacv1.GroupName || gvk.Kind == "ServiceAccount" || gvk.Kind == "Deployment":
			// The manager's identity, RBAC and Deployment go into the CSV's install strategy.
		case gvk.Group == "admissionregistration.k8s.io":
			// A bundle cannot carry admission policies (OLM installs only a few kinds): the
			// manager creates its guard itself at start-up (hostguard.Ensurer).
		default:
			rest = append(rest, obj)
		}
	}
	if csv == nil {
		return nil, fmt.Errorf("%s holds no ClusterServiceVersion base", ManifestsOverlay)
	}

	install, err := installStrategy(objs)
	if err != nil {
		return nil, err
	}
	owned, err := ownedCRDs(csv, crds)
	if err != nil {
		return nil, err
	}
	almExamples, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		return nil, err
	}

	csv.SetName(o.Package + ".v" + o.Version)
	ann := csv.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["alm-examples"] = string(almExamples)
	ann["containerImage"] = o.Image
	ann["operatorframework.io/suggested-namespace"] = Namespace
	ann["operators.operatorframework.io/project_layout"] = "go.kubebuilder.io/v4"
	csv.SetAnnotations(ann)
	set := func(v any, path ...string) {
		if err == nil {
			err = unstructured.SetNestedField(csv.Object, v, path...)
		}
	}
	set(o.Version, "spec", "version")
	if o.Replaces != "" {
		set(o.Replaces, "spec", "replaces")
	}
	set([]any{map[string]any{"name": ManagerContainer, "image": o.Image}}, "spec", "relatedImages")
	set(install, "spec", "install", "spec")
	set(owned, "spec", "customresourcedefinitions", "owned")
	if err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(csv.Object)
	if err != nil {
		return nil, err
	}
	files[BundleManifests+"/"+o.Package+".clusterserviceversion.yaml"] = data

	for _, obj := range rest {
		obj = obj.DeepCopy()
		// OLM creates them in the operator's namespace.
		obj.SetNamespace("")
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		gv := strings.ReplaceAll(obj.GetAPIVersion(), "/", "_")
		files[fmt.Sprintf("%s/%s_%s_%s.yaml", BundleManifests, obj.GetName(), gv, strings.ToLower(obj.GetKind()))] = data
	}

	labels := bundleLabels(o)
	var ann2, docker bytes.Buffer
	ann2.WriteString("# Generated by hack/deploygen from config/manifests (make bundle). DO NOT EDIT.\nannotations:\n")
	docker.WriteString("# Generated by hack/deploygen from config/manifests (make bundle). DO NOT EDIT.\n# Build: make bundle-build\nFROM scratch\n\n")
	for _, l := range labels {
		fmt.Fprintf(&ann2, "  %s: %s\n", l[0], l[1])
		fmt.Fprintf(&docker, "LABEL %s=%s\n", l[0], l[1])
	}
	fmt.Fprintf(&docker, "\nCOPY %s/%s /%s/\nCOPY %s/%s /%s/\n", BundleDir, BundleManifests, BundleManifests, BundleDir, BundleMetadata, BundleMetadata)
	files[BundleAnnotations] = ann2.Bytes()
	files[BundleDockerfile] = docker.Bytes()
	return files, nil
}

// bundleLabels are the bundle's annotations, which its image carries as labels too.
func bundleLabels(o BundleOptions) [][2]string {
	return [][2]string{
		{"operators.operatorframework.io.bundle.mediatype.v1", "registry+v1"},
		{"operators.operatorframework.io.bundle.manifests.v1", BundleManifests + "/"},
		{"operators.operatorframework.io.bundle.metadata.v1", BundleMetadata + "/"},
		{"operators.operatorframework.io.bundle.package.v1", o.Package},
		{"operators.operatorframework.io.bundle.channels.v1", strings.Join(o.Channels, ",")},
		{"operators.operatorframework.io.bundle.channel.default.v1", o.DefaultChannel},
	}
}

// installStrategy builds the CSV's deployment install strategy from the manager Deployment
// and the roles bound to its ServiceAccount.
func installStrategy(objs []*unstructured.Unstructured) (map[string]any, error) {
	d, err := ManagerDeploymentOf(objs)
	if err != nil {
		return nil, err
	}
	perms, err := ManagerPermissions(objs)
	if err != nil {
		return nil, err
	}
	_, sa, _ := strings.Cut(perms.ServiceAccount, "/")
	toAny := func(rules []rbacv1.PolicyRule) ([]any, error) {
		var out []any
		for _, r := range rules {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	}
	spec, _, _ := unstructured.NestedMap(d.Object, "spec")
	labels := map[string]any{}
	for k, v := range d.GetLabels() {
		labels[k] = v
	}
	strategy := map[string]any{
		"deployments": []any{map[string]any{"name": d.GetName(), "label": labels, "spec": spec}},
	}
	if len(perms.Cluster) > 0 {
		rules, err := toAny(perms.Cluster)
		if err != nil {
			return nil, err
		}
		strategy["clusterPermissions"] = []any{map[string]any{"serviceAccountName": sa, "rules": rules}}
	}
	for ns, rules := range perms.Namespaced {
		if ns != d.GetNamespace() {
			return nil, fmt.Errorf("the manager holds a Role in namespace %s: a CSV can only grant namespaced permissions in the operator's namespace", ns)
		}
		r, err := toAny(rules)
		if err != nil {
			return nil, err
		}
		strategy["permissions"] = []any{map[string]any{"serviceAccountName": sa, "rules": r}}
	}
	return strategy, nil
}

// ownedCRDs lists every CRD as owned, with the displayName and description the CSV base
// gives it, and its kind and storage version.
func ownedCRDs(csv *unstructured.Unstructured, crds []*unstructured.Unstructured) ([]any, error) {
	base, _, _ := unstructured.NestedSlice(csv.Object, "spec", "customresourcedefinitions", "owned")
	described := map[string]map[string]any{}
	for _, b := range base {
		bm, ok := b.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("CSV base: owned CRD entries must be objects")
		}
		name, _ := bm["name"].(string)
		described[name] = bm
	}
	var owned []any
	for _, crd := range crds {
		name := crd.GetName()
		d, ok := described[name]
		if !ok {
			return nil, fmt.Errorf("CRD %s has no entry under spec.customresourcedefinitions.owned in %s/bases: add its displayName and description", name, ManifestsOverlay)
		}
		delete(described, name)
		displayName, _ := d["displayName"].(string)
		description, _ := d["description"].(string)
		if displayName == "" || description == "" {
			return nil, fmt.Errorf("CRD %s: the CSV base must give it a displayName and a description", name)
		}
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		storage := ""
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if s, _ := vm["storage"].(bool); s {
				storage, _ = vm["name"].(string)
			}
		}
		if storage == "" {
			return nil, fmt.Errorf("CRD %s has no storage version", name)
		}
		entry := map[string]any{}
		for k, v := range d {
			entry[k] = v
		}
		entry["kind"] = kind
		entry["version"] = storage
		owned = append(owned, entry)
	}
	if len(described) > 0 {
		var extra []string
		for n := range described {
			extra = append(extra, n)
		}
		slices.Sort(extra)
		return nil, fmt.Errorf("the CSV base describes CRDs that config/crd does not hold: %v", extra)
	}
	slices.SortFunc(owned, func(a, b any) int {
		return strings.Compare(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
	})
	return owned, nil
}
