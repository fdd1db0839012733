package register

import (
	"bytes"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/testing/golden"

	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/memlimit"
)

// config/agent/agent.yaml is what register installs in a member, for those who install the
// agent with kustomize instead (they write the credential Secret themselves). It must say what
// the code says. UPDATE_GOLDEN=1 rewrites it.
func TestAgentManifestsShipped(t *testing.T) {
	sa, cr, crb := join.MemberAccessObjects(agentauth.AgentServiceAccount, nil, join.KubernetesGroups, false)
	policy, binding := join.MemberGuard(agentauth.AgentServiceAccount, nil, false)
	var out bytes.Buffer
	out.WriteString("# The Pull mode agent in a member cluster, as `kubectl flotilla register` installs it\n" +
		"# (internal/register): generated, do not edit. Regenerate with: UPDATE_GOLDEN=1 go test ./internal/register/\n" +
		"# It needs the Secret flotilla-system/flotilla-agent-host (keys cluster, server, token, caBundle),\n" +
		"# which register writes. The ClusterRole covers the API groups of a plain Kubernetes member;\n" +
		"# register makes it from the member's own groups (`kubectl flotilla register NAME --refresh-rights`\n" +
		"# adds groups served since). The admission policy guards what RBAC cannot: see docs/member-rights.md.\n")
	for _, obj := range []any{sa, cr, crb, policy, binding, AgentDeployment(DefaultImage, nil)} {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(bytes.ReplaceAll(b, []byte("  creationTimestamp: null\n"), nil))
	}
	path := filepath.Join("..", "..", "config", "agent", "agent.yaml")
	golden.Check(t, path, out.Bytes(), "UPDATE_GOLDEN=1 go test ./internal/register/")
}

func TestTokenID(t *testing.T) {
	for _, bad := range []string{"", "abc", "a.b.c", "a.eyJzdWIiOiJhZG1pbiJ9.c"} {
		if _, err := TokenID(bad); err == nil {
			t.Errorf("TokenID(%q): want an error", bad)
		}
	}
	// {"sub":"system:serviceaccount:flotilla-system:flotilla-bootstrap-abc123"}
	tok := "x.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZmxvdGlsbGEtc3lzdGVtOmZsb3RpbGxhLWJvb3RzdHJhcC1hYmMxMjMifQ.y"
	if id, err := TokenID(tok); err != nil || id != "abc123" {
		t.Errorf("TokenID = %q, %v; want abc123", id, err)
	}
}

// The agent's soft memory limit comes from its own container's memory limit.
func TestAgentMemoryLimitReachesTheAgent(t *testing.T) {
	d := AgentDeployment(DefaultImage, nil)
	c := d.Spec.Template.Spec.Containers[0]
	if c.Resources.Limits.Memory().IsZero() {
		t.Fatal("the agent's container has no memory limit")
	}
	for _, e := range c.Env {
		if e.Name == memlimit.EnvContainerLimit {
			ref := e.ValueFrom.ResourceFieldRef
			if ref == nil || ref.ContainerName != c.Name || ref.Resource != "limits.memory" {
				t.Fatalf("$%s is %+v, want its container's limits.memory", e.Name, e.ValueFrom)
			}
			return
		}
	}
	t.Fatalf("the agent's container has no $%s", memlimit.EnvContainerLimit)
}
