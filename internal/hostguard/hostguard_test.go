package hostguard_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/hostguard"
	"github.com/flotilla-io/flotilla/internal/testing/golden"
)

// The kustomize install ships Policy() for flotilla-system/flotilla-manager as
// config/rbac/manager_guard.yaml; the file must say what the code says. UPDATE_GOLDEN=1
// rewrites it.
func TestGuardShipped(t *testing.T) {
	golden.Check(t, filepath.Join("..", "..", "config", "rbac", "manager_guard.yaml"), Manifest(t),
		"UPDATE_GOLDEN=1 go test ./internal/hostguard/")
}

// Manifest renders the guard as shipped.
func Manifest(t testing.TB) []byte {
	var out bytes.Buffer
	out.WriteString("# The manager's guard (internal/hostguard.Policy): generated, do not edit.\n" +
		"# Regenerate with: UPDATE_GOLDEN=1 go test ./internal/hostguard/\n")
	policy, binding := hostguard.Policy("flotilla-system", "flotilla-manager")
	for _, o := range []any{policy, binding} {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return out.Bytes()
}

func TestServiceAccountOf(t *testing.T) {
	for user, want := range map[string][2]string{
		"system:serviceaccount:flotilla-system:flotilla-manager": {"flotilla-system", "flotilla-manager"},
		"system:serviceaccount:ops:robot":                        {"ops", "robot"},
		"admin":                                                  {},
		"system:serviceaccount:ops":                              {},
		"system:serviceaccount::robot":                           {},
		"system:serviceaccount:ops:robot:extra":                  {},
	} {
		ns, name, ok := hostguard.ServiceAccountOf(user)
		if got := [2]string{ns, name}; ok != (want != [2]string{}) || (ok && got != want) {
			t.Errorf("ServiceAccountOf(%q) = %q, %q, %v; want %v", user, ns, name, ok, want)
		}
	}
}
