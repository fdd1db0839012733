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

func TestBootstrapUserID(t *testing.T) {
	if id, ok := BootstrapUserID(BootstrapUser("edge-1-abc123")); !ok || id != "edge-1-abc123" {
		t.Errorf("BootstrapUserID(BootstrapUser(edge-1-abc123)) = %q, %v", id, ok)
	}
	for _, user := range []string{AgentUser("m1"), "system:serviceaccount:other:flotilla-bootstrap-x", "admin"} {
		if _, ok := BootstrapUserID(user); ok {
			t.Errorf("BootstrapUserID(%q) says it is a bootstrap token", user)
		}
	}
}

func TestBootstrapCluster(t *testing.T) {
	for _, tc := range []struct {
		id, want string
		ok       bool
	}{
		{BootstrapID("edge-1", "abc123"), "edge-1", true},
		{BootstrapID("a", "000000"), "a", true},
		{BootstrapID("member-1-x", "zz9zz9"), "member-1-x", true},
		{"abc123", "", false},         // an older token: six characters, no cluster
		{"edge-1-abc12", "", false},   // nonce too short
		{"edge-1-ABC123", "", false},  // not lowercase
		{"-abc123", "", false},        // no cluster
		{"edge_1-abc123", "", false},  // not a DNS label
		{"edge-1--abc123", "", false}, // the name may not end with a dash
		{"", "", false},
	} {
		got, ok := BootstrapCluster(tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("BootstrapCluster(%q) = %q, %v; want %q, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}

// The installation ships ClusterRoles() and BootstrapPolicy() as
// config/rbac/agent_roles.yaml; the file must say what the code says. UPDATE_GOLDEN=1
// rewrites it.
func TestClusterRolesShipped(t *testing.T) {
	var out bytes.Buffer
	out.WriteString("# Pull mode's ClusterRoles and the admission policy that keeps bootstrap tokens to\n" +
		"# registering one Pull cluster (internal/agentauth.ClusterRoles and BootstrapPolicy):\n" +
		"# generated, do not edit. Regenerate with: UPDATE_GOLDEN=1 go test ./internal/agentauth/\n")
	objs := []any{}
	for _, r := range ClusterRoles() {
		objs = append(objs, r)
	}
	policy, binding := BootstrapPolicy()
	objs = append(objs, policy, binding)
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		b = bytes.ReplaceAll(b, []byte("  creationTimestamp: null\n"), nil)
		out.Write(bytes.ReplaceAll(b, []byte("status: {}\n"), nil))
	}
	path := filepath.Join("..", "..", "config", "rbac", "agent_roles.yaml")
	golden.Check(t, path, out.Bytes(), "UPDATE_GOLDEN=1 go test ./internal/agentauth/")
}
