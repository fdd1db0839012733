package agentauth

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/testing/golden"
)

func TestRotationDue(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expires := issued.Add(10 * time.Hour)
	for _, tc := range []struct {
		name            string
		issued, expires time.Time
		now             time.Time
		want            bool
	}{
		{"fresh", issued, expires, issued.Add(time.Hour), false},
		{"just before four fifths", issued, expires, issued.Add(8*time.Hour - time.Second), false},
		{"at four fifths", issued, expires, issued.Add(8 * time.Hour), true},
		{"expired", issued, expires, expires.Add(time.Hour), true},
		{"unknown dates", time.Time{}, time.Time{}, issued, true},
		{"expiry before issue", expires, issued, issued, true},
	} {
		if got := RotationDue(tc.issued, tc.expires, tc.now); got != tc.want {
			t.Errorf("%s: RotationDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBootstrapID(t *testing.T) {
	if id, ok := BootstrapID(BootstrapUser("abc123")); !ok || id != "abc123" {
		t.Errorf("BootstrapID(BootstrapUser(abc123)) = %q, %v", id, ok)
	}
	for _, user := range []string{AgentUser("m1"), "system:serviceaccount:other:flotilla-bootstrap-x", "admin"} {
		if _, ok := BootstrapID(user); ok {
			t.Errorf("BootstrapID(%q) says it is a bootstrap token", user)
		}
	}
}

// The installation ships ClusterRoles() as config/rbac/agent_roles.yaml; the file must say
// what the code says. UPDATE_GOLDEN=1 rewrites it.
func TestClusterRolesShipped(t *testing.T) {
	var out bytes.Buffer
	out.WriteString("# Pull mode's ClusterRoles (internal/agentauth.ClusterRoles): generated, do not edit.\n" +
		"# Regenerate with: UPDATE_GOLDEN=1 go test ./internal/agentauth/\n")
	for _, r := range ClusterRoles() {
		b, err := yaml.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	path := filepath.Join("..", "..", "config", "rbac", "agent_roles.yaml")
	golden.Check(t, path, out.Bytes(), "UPDATE_GOLDEN=1 go test ./internal/agentauth/")
}
