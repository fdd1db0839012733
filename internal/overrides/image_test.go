package overrides

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseImage(t *testing.T) {
	tests := []struct {
		image string
		want  imageRef
	}{
		{"nginx", imageRef{repository: "nginx"}},
		{"nginx:1.27", imageRef{repository: "nginx", tag: "1.27"}},
		{"library/nginx:1.27", imageRef{repository: "library/nginx", tag: "1.27"}},
		{"docker.io/library/nginx:1.27", imageRef{registry: "docker.io", repository: "library/nginx", tag: "1.27"}},
		{"localhost/app", imageRef{registry: "localhost", repository: "app"}},
		{"localhost:5000/app:v1", imageRef{registry: "localhost:5000", repository: "app", tag: "v1"}},
		{"registry:5000/team/app", imageRef{registry: "registry:5000", repository: "team/app"}},
		{"10.0.0.1:5000/app:v1", imageRef{registry: "10.0.0.1:5000", repository: "app", tag: "v1"}},
		{"[::1]:5000/app:v1", imageRef{registry: "[::1]:5000", repository: "app", tag: "v1"}},
		{"team/app", imageRef{repository: "team/app"}},
		{"nginx@" + digest, imageRef{repository: "nginx", digest: digest}},
		{"quay.io/a/b/c:1.0@" + digest, imageRef{registry: "quay.io", repository: "a/b/c", tag: "1.0", digest: digest}},
		{"gcr.io/x/y__z-w.v", imageRef{registry: "gcr.io", repository: "x/y__z-w.v"}},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, err := parseImage(tt.image)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(imageRef{})); diff != "" {
				t.Errorf("parseImage() mismatch (-want +got):\n%s", diff)
			}
			if got.String() != tt.image {
				t.Errorf("String() = %q, want %q", got.String(), tt.image)
			}
		})
	}
}

func TestParseImageErrors(t *testing.T) {
	for image, want := range map[string]string{
		"":                       "empty",
		"Nginx:1.27":             "invalid repository",
		"nginx:":                 "invalid tag",
		"nginx:-x":               "invalid tag",
		"nginx@sha256:abc":       "digest",
		"nginx@":                 "digest",
		"docker.io/":             "repository is empty",
		"docker.io//nginx":       "invalid repository",
		"my_registry.io/nginx":   "invalid registry",
		"nginx 1.27":             "invalid repository",
		"a/b:c/d":                "invalid repository",
		"docker.io:port/nginx":   "invalid registry",
		"nginx:1.27:1.28":        "invalid repository",
		strings.Repeat("a", 256): "longer than 255",
	} {
		_, err := parseImage(image)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseImage(%q) error = %v, want one containing %q", image, err, want)
		}
	}
}

func TestOverrideImage(t *testing.T) {
	io := func(c policyv1alpha1.ImageComponent, op policyv1alpha1.OverriderOperator, v string) policyv1alpha1.ImageOverrider {
		return policyv1alpha1.ImageOverrider{Component: c, Operator: op, Value: v}
	}
	const (
		reg  = policyv1alpha1.Registry
		repo = policyv1alpha1.Repository
		tag  = policyv1alpha1.Tag
		add  = policyv1alpha1.OverriderOpAdd
		rep  = policyv1alpha1.OverriderOpReplace
		rm   = policyv1alpha1.OverriderOpRemove
	)
	tests := []struct {
		name  string
		image string
		o     policyv1alpha1.ImageOverrider
		want  string
	}{
		{"nginx scenario", "docker.io/library/nginx:1.27", io(reg, rep, "registry.example.internal"), "registry.example.internal/library/nginx:1.27"},
		{"replace registry with port", "nginx:1.27", io(reg, rep, "localhost:5000"), "localhost:5000/nginx:1.27"},
		{"add registry where none", "library/nginx", io(reg, add, "registry.example.internal"), "registry.example.internal/library/nginx"},
		{"add appends to registry", "registry.example/app", io(reg, add, ".eu"), "registry.example.eu/app"},
		{"remove registry", "docker.io/library/nginx:1.27", io(reg, rm, ""), "library/nginx:1.27"},
		{"remove absent registry", "nginx", io(reg, rm, ""), "nginx"},
		{"replace registry with empty removes it", "quay.io/app", io(reg, rep, ""), "app"},
		{"replace repository", "docker.io/library/nginx:1.27", io(repo, rep, "mirror/nginx"), "docker.io/mirror/nginx:1.27"},
		{"add appends to repository", "docker.io/library/nginx:1.27", io(repo, add, "-unprivileged"), "docker.io/library/nginx-unprivileged:1.27"},
		{"replace tag", "docker.io/library/nginx:1.27", io(tag, rep, "1.28"), "docker.io/library/nginx:1.28"},
		{"replace tag keeps registry port", "localhost:5000/app:v1", io(tag, rep, "v2"), "localhost:5000/app:v2"},
		{"add tag where none", "nginx", io(tag, add, "1.27"), "nginx:1.27"},
		{"add appends to tag", "nginx:1.27", io(tag, add, "-alpine"), "nginx:1.27-alpine"},
		{"remove tag", "nginx:1.27", io(tag, rm, ""), "nginx"},
		{"remove tag and digest", "nginx:1.27@" + digest, io(tag, rm, ""), "nginx"},
		{"replace tag drops digest", "nginx:1.27@" + digest, io(tag, rep, "1.28"), "nginx:1.28"},
		{"replace tag of digest-only image", "nginx@" + digest, io(tag, rep, "1.28"), "nginx:1.28"},
		{"replace tag with digest pins", "nginx:1.27", io(tag, rep, digest), "nginx@" + digest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := overrideImage(tt.image, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("overrideImage(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

func TestOverrideImageErrors(t *testing.T) {
	tests := []struct {
		name  string
		image string
		o     policyv1alpha1.ImageOverrider
		want  string
	}{
		{"malformed image", "Nginx:1.27", policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "1"}, `image "Nginx:1.27": invalid repository`},
		{"registry that reads as repository", "nginx", policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "myregistry"}, `registry "myregistry" would read as part of the repository`},
		{"invalid registry", "nginx", policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "a b.io"}, `invalid registry "a b.io"`},
		{"remove repository", "nginx", policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Repository, Operator: policyv1alpha1.OverriderOpRemove}, "cannot be removed"},
		{"repository that reads as registry", "nginx", policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Repository, Operator: policyv1alpha1.OverriderOpReplace, Value: "evil.io/nginx"}, `would read as registry "evil.io"`},
		{"invalid tag", "nginx", policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Tag, Operator: policyv1alpha1.OverriderOpReplace, Value: "1.27/x"}, "invalid tag"},
		{"unknown component", "nginx", policyv1alpha1.ImageOverrider{Component: "Digest", Operator: policyv1alpha1.OverriderOpReplace}, "unknown component"},
		{"unknown operator", "nginx", policyv1alpha1.ImageOverrider{Component: policyv1alpha1.Tag, Operator: "test"}, "unknown operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := overrideImage(tt.image, tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("overrideImage() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// FuzzParseImage checks that parsing never panics and that every reference it accepts
// formats back to the same string and parses to the same parts.
func FuzzParseImage(f *testing.F) {
	for _, s := range []string{"nginx", "docker.io/library/nginx:1.27", "localhost:5000/a:b", "[::1]:5000/app", "nginx@" + digest, "a:b@c:d", ":", "@", "/", "a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseImage(s)
		if err != nil {
			return
		}
		if r.String() != s {
			t.Fatalf("parseImage(%q).String() = %q", s, r.String())
		}
		if err := r.validate(); err != nil {
			t.Fatalf("parseImage(%q) accepted a reference validate rejects: %v", s, err)
		}
		again, err := parseImage(r.String())
		if err != nil || again != r {
			t.Fatalf("parseImage(%q) round trip = %+v, %v; want %+v", s, again, err, r)
		}
	})
}

// FuzzOverrideImage checks that an override never panics and only ever produces references
// that parse back to themselves.
func FuzzOverrideImage(f *testing.F) {
	f.Add("docker.io/library/nginx:1.27", "Registry", "replace", "registry.example.internal")
	f.Add("nginx", "Tag", "add", "-x")
	f.Add("nginx@"+digest, "Tag", "replace", digest)
	f.Add("a/b", "Repository", "add", "/c")
	f.Fuzz(func(t *testing.T, image, component, op, value string) {
		out, err := overrideImage(image, policyv1alpha1.ImageOverrider{
			Component: policyv1alpha1.ImageComponent(component), Operator: policyv1alpha1.OverriderOperator(op), Value: value,
		})
		if err != nil {
			return
		}
		r, err := parseImage(out)
		if err != nil {
			t.Fatalf("overrideImage(%q) = %q, which does not parse: %v", image, out, err)
		}
		if r.String() != out {
			t.Fatalf("overrideImage(%q) = %q, which formats as %q", image, out, r.String())
		}
	})
}
