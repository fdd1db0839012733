package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrateAndPromoteArgumentErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate"}, "--from-kubeconfig is required"},
		{[]string{"migrate", "--from-kubeconfig", missing, "--karmada-lease", "justaname"}, `--karmada-lease "justaname": want NAMESPACE/NAME`},
		{[]string{"migrate", "--from-kubeconfig", missing, "--member-kubeconfig", "member1"}, `--member-kubeconfig "member1": want NAME=FILE`},
		{[]string{"migrate", "--from-kubeconfig", missing, "--member-kubeconfig", "m=" + missing, "--member-kubeconfig", "m=" + missing}, "m given twice"},
		{[]string{"migrate", "--from-kubeconfig", missing}, "Karmada kubeconfig"},
		{[]string{"migrate", "extra"}, `unknown command "extra"`},
		{[]string{"promote", "deployment"}, `"deployment": expected KIND/NAME`},
		{[]string{"promote", "deployment/web"}, "--cluster is required"},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	for _, cmd := range []string{"migrate", "promote"} {
		out, err := run(t, cmd, "--help")
		if err != nil || !strings.Contains(out, "Examples:") {
			t.Errorf("%s --help: %v\n%s", cmd, err, out)
		}
	}
}
