package overrides

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/podspec"
)

// The image reference grammar: [registry/]repository[:tag][@digest].
var (
	// A registry host: DNS labels separated by dots, or a bracketed IPv6 address, with an
	// optional port.
	registryRE = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	// Repository path components: lower-case alphanumerics joined by '.', '_', '__' or dashes.
	repositoryRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	tagRE        = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
)

// maxRepositoryLength is the longest repository (path) a registry accepts.
const maxRepositoryLength = 255

// imageRef is a parsed container image reference. Nothing is normalised: an image without a
// registry keeps none (the runtime's default applies), and docker.io stays docker.io.
type imageRef struct {
	registry   string // host[:port]; empty when the reference names none
	repository string // path, for example library/nginx
	tag        string // empty when none
	digest     string // algorithm:hex; empty when none
}

// parseImage parses an image reference. The first path component is the registry when it
// contains '.' or ':' or is "localhost"; the tag follows the last ':' after the last '/'; the
// digest follows '@'.
func parseImage(s string) (imageRef, error) {
	var r imageRef
	if s == "" {
		return r, fmt.Errorf("image reference is empty")
	}
	name := s
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, r.digest = name[:i], name[i+1:]
		if !digestRE.MatchString(r.digest) {
			return r, fmt.Errorf("image %q: digest %q is not algorithm:hex", s, r.digest)
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, r.tag = name[:i], name[i+1:]
		if !tagRE.MatchString(r.tag) {
			return r, fmt.Errorf("image %q: invalid tag %q", s, r.tag)
		}
	}
	if i := strings.IndexByte(name, '/'); i >= 0 && isRegistry(name[:i]) {
		r.registry, name = name[:i], name[i+1:]
		if !registryRE.MatchString(r.registry) {
			return r, fmt.Errorf("image %q: invalid registry %q", s, r.registry)
		}
	}
	r.repository = name
	if err := validateRepository(r.repository); err != nil {
		return r, fmt.Errorf("image %q: %w", s, err)
	}
	return r, nil
}

// isRegistry reports whether the first path component of a reference names a registry.
func isRegistry(component string) bool {
	return strings.ContainsAny(component, ".:") || component == "localhost"
}

func validateRepository(repo string) error {
	switch {
	case repo == "":
		return fmt.Errorf("repository is empty")
	case len(repo) > maxRepositoryLength:
		return fmt.Errorf("repository is longer than %d characters", maxRepositoryLength)
	case !repositoryRE.MatchString(repo):
		return fmt.Errorf("invalid repository %q: path components are lower-case letters and digits separated by '.', '_', '__', '-' and '/'", repo)
	}
	return nil
}

// String formats the reference.
func (r imageRef) String() string {
	var b strings.Builder
	if r.registry != "" {
		b.WriteString(r.registry)
		b.WriteByte('/')
	}
	b.WriteString(r.repository)
	if r.tag != "" {
		b.WriteByte(':')
		b.WriteString(r.tag)
	}
	if r.digest != "" {
		b.WriteByte('@')
		b.WriteString(r.digest)
	}
	return b.String()
}

// overrideImage applies one imageOverrider to an image reference:
//
//   - Registry: add appends the value to the registry (sets it when there is none), replace
//     sets it, remove drops it.
//   - Repository: add appends the value to the repository, replace sets it; remove is an
//     error, since an image needs a repository.
//   - Tag: the image's version. add appends the value to the tag (sets it when there is
//     none), replace sets it, remove drops the tag. A replace value of the form algorithm:hex
//     is a digest and pins the image instead. Any change drops the digest the image had, as
//     the runtime would otherwise ignore the new tag.
//
// The result must be a valid reference that parses back to the same parts; a registry value
// without '.' or ':' that is not "localhost" would read as part of the repository, and is an
// error.
func overrideImage(image string, o policyv1alpha1.ImageOverrider) (string, error) {
	r, err := parseImage(image)
	if err != nil {
		return "", err
	}
	if err := r.apply(o); err != nil {
		return "", err
	}
	if err := r.validate(); err != nil {
		return "", fmt.Errorf("overriding image %q: %w", image, err)
	}
	return r.String(), nil
}

func (r *imageRef) apply(o policyv1alpha1.ImageOverrider) error {
	var field *string
	switch o.Component {
	case policyv1alpha1.Registry:
		field = &r.registry
	case policyv1alpha1.Repository:
		field = &r.repository
		if o.Operator == policyv1alpha1.OverriderOpRemove {
			return fmt.Errorf("component Repository cannot be removed: an image needs a repository")
		}
	case policyv1alpha1.Tag:
		field = &r.tag
		r.digest = ""
		if o.Operator == policyv1alpha1.OverriderOpReplace && digestRE.MatchString(o.Value) {
			r.tag, field = "", &r.digest
		}
	default:
		return fmt.Errorf("unknown component %q: must be Registry, Repository or Tag", o.Component)
	}
	switch o.Operator {
	case policyv1alpha1.OverriderOpAdd:
		*field += o.Value
	case policyv1alpha1.OverriderOpReplace:
		*field = o.Value
	case policyv1alpha1.OverriderOpRemove:
		*field = ""
	default:
		return fmt.Errorf("unknown operator %q: must be add, remove or replace", o.Operator)
	}
	return nil
}

// validate checks each part, and that the formatted reference reads back as the same parts.
func (r imageRef) validate() error {
	if r.registry != "" {
		if !registryRE.MatchString(r.registry) {
			return fmt.Errorf("invalid registry %q: want a host name or IP address with an optional port", r.registry)
		}
		if !isRegistry(r.registry) {
			return fmt.Errorf("registry %q would read as part of the repository: a registry must contain '.' or ':' or be \"localhost\"", r.registry)
		}
	}
	if err := validateRepository(r.repository); err != nil {
		return err
	}
	if r.registry == "" {
		if first, _, found := strings.Cut(r.repository, "/"); found && isRegistry(first) {
			return fmt.Errorf("repository %q would read as registry %q", r.repository, first)
		}
	}
	if r.tag != "" && !tagRE.MatchString(r.tag) {
		return fmt.Errorf("invalid tag %q: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", r.tag)
	}
	if r.digest != "" && !digestRE.MatchString(r.digest) {
		return fmt.Errorf("invalid digest %q: want algorithm:hex", r.digest)
	}
	return nil
}

// applyImageOverrider applies one imageOverrider to the object: to the image at its
// predicate path, or, without a predicate, to every container and init container image of a
// built-in workload kind. Containers without an image (left to config management) are
// skipped; other kinds are left unchanged.
func applyImageOverrider(obj *unstructured.Unstructured, o policyv1alpha1.ImageOverrider) error {
	if o.Predicate != nil {
		return overrideImageAt(obj.Object, o.Predicate.Path, o)
	}
	return forEachContainer(obj, func(c map[string]any, path string) error {
		v, ok := c["image"]
		if !ok {
			return nil
		}
		image, isString := v.(string)
		if !isString {
			return fmt.Errorf("%s/image is %s, not a string", path, typeName(v))
		}
		if image == "" {
			return nil
		}
		out, err := overrideImage(image, o)
		if err != nil {
			return fmt.Errorf("%s/image: %w", path, err)
		}
		c["image"] = out
		return nil
	})
}

func overrideImageAt(doc map[string]any, path string, o policyv1alpha1.ImageOverrider) error {
	p, err := parsePointer(path)
	if err != nil {
		return fmt.Errorf("predicate: %w", err)
	}
	v, err := p.get(doc)
	if err != nil {
		return fmt.Errorf("predicate: %w", err)
	}
	image, ok := v.(string)
	if !ok {
		return fmt.Errorf("predicate: path %s is %s, not an image string", path, typeName(v))
	}
	out, err := overrideImage(image, o)
	if err != nil {
		return fmt.Errorf("predicate path %s: %w", path, err)
	}
	return p.replace(doc, out)
}

// forEachContainer calls fn with every container and init container of a built-in workload
// kind, and the JSON pointer of the container. Other kinds have none.
func forEachContainer(obj *unstructured.Unstructured, fn func(c map[string]any, path string) error) error {
	specPath := podspec.Path(obj.GroupVersionKind().GroupKind())
	if specPath == nil {
		return nil
	}
	spec, found, err := unstructured.NestedFieldNoCopy(obj.Object, specPath...)
	if err != nil || !found {
		return err // a workload without a pod spec has no containers
	}
	specMap, ok := spec.(map[string]any)
	if !ok {
		return fmt.Errorf("/%s is %s, not an object", strings.Join(specPath, "/"), typeName(spec))
	}
	for _, list := range podspec.ContainerLists {
		listPath := "/" + strings.Join(append(specPath, list), "/")
		raw, found := specMap[list]
		if !found || raw == nil {
			continue
		}
		containers, ok := raw.([]any)
		if !ok {
			return fmt.Errorf("%s is %s, not an array", listPath, typeName(raw))
		}
		for i, c := range containers {
			cm, ok := c.(map[string]any)
			if !ok {
				return fmt.Errorf("%s/%d is %s, not an object", listPath, i, typeName(c))
			}
			if err := fn(cm, fmt.Sprintf("%s/%d", listPath, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
