package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run executes the plugin's root command with args, as main does, without a host: these
// tests cover the wiring that fails before any request.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, err := run(t, "completion", shell)
		if err != nil || !strings.Contains(out, "kubectl-flotilla") {
			t.Errorf("completion %s: err %v, output %.80q", shell, err, out)
		}
	}
	out, err := run(t, "__complete", "describe", "")
	if err != nil || !strings.Contains(out, "cluster") {
		t.Errorf("__complete describe: err %v, output %q", err, out)
	}
}

func TestArgumentErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"status", "deploy/web/x"}, "expected KIND/NAME or KIND NAME"},
		{[]string{"status", "deploy/web", "extra"}, "expected KIND/NAME or KIND NAME"},
		{[]string{"status", "deploy/web", "-o", "table"}, `unknown output format "table"`},
		{[]string{"get", "deploy", "a", "b"}, "expected KIND [NAME]"},
		{[]string{"get", "deploy", "-o", "name"}, `unknown output format "name"`},
		{[]string{"get", "clusters", "-o", "name"}, `unknown output format "name"`},
		{[]string{"describe", "cluster"}, "expected describe cluster NAME"},
		{[]string{"describe", "deploy/web/x"}, "expected KIND/NAME or KIND NAME"},
		{[]string{"describe", "deploy/web", "--member-timeout", "0s"}, "--member-timeout must be positive"},
		{[]string{"logs"}, "name a workload (KIND/NAME) or select pods with -l"},
		{[]string{"logs", "deploy/web", "--tail", "-2"}, "--tail must be -1 (all lines) or more"},
		{[]string{"logs", "a", "b", "c"}, "accepts at most 2 arg(s)"},
		{[]string{"events", "-o", "name"}, `unknown output format "name"`},
		{[]string{"events", "-A", "-n", "shop"}, "-A and -n cannot be used together"},
		{[]string{"dashboard", "--port", "70000"}, "invalid --port 70000"},
		{[]string{"dashboard", "extra"}, `unknown command "extra"`},
		{[]string{"join", "m1", "--cluster-kubeconfig", "m1.kubeconfig", "--cluster-admin", "--allow-rbac-escalation"}, "[cluster-admin allow-rbac-escalation] are set none of the others can be"},
		{[]string{"register", "edge"}, "register needs --host and --token"},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestNamespaceDefault(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: host, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: admin, user: {token: t}}]
contexts:
- {name: shop, context: {cluster: host, user: admin, namespace: shop}}
- {name: plain, context: {cluster: host, user: admin}}
current-context: shop
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ context, flag, want string }{
		{"", "", "shop"},
		{"plain", "", "default"},
		{"", "other", "other"},
	} {
		ns := &namespaceFlags{host: &hostFlags{kubeconfig: kubeconfig, context: tc.context}, namespace: tc.flag}
		got, err := ns.resolve()
		if err != nil || got != tc.want {
			t.Errorf("context %q, -n %q: got %q, %v; want %q", tc.context, tc.flag, got, err, tc.want)
		}
	}
}

func TestFlags(t *testing.T) {
	out, err := run(t, "status", "--help")
	if err != nil || !strings.Contains(out, "--watch") || !strings.Contains(out, "-n, --namespace") {
		t.Errorf("status --help: %v\n%s", err, out)
	}
	out, err = run(t, "get", "--help")
	for _, flag := range []string{"-A, --all-namespaces", "-l, --selector", "--clusters", "--member-timeout duration", "-o, --output"} {
		if err != nil || !strings.Contains(out, flag) {
			t.Errorf("get --help lacks %q: %v", flag, err)
		}
	}
}
