package systemnamespace

import (
	"testing"

	"github.com/google/cel-go/cel"
)

var cases = []struct {
	ns   string
	want bool
}{
	{"kube-system", true},
	{"kube-public", true},
	{"kube-node-lease", true},
	{"kube-foo", true},
	{"flotilla-system", true},
	{"karmada-system", true},
	{"karmada-cluster", true},
	{"karmada-es-member1", true},
	{"default", false},
	{"kube", false},
	{"kubernetes-dashboard", false},
	{"my-kube-apps", false},
	{"flotilla-system-apps", false},
	{"flotilla", false},
	{"karmada-es", false},
	{"karmada-apps", false},
	{"", false},
}

func TestIs(t *testing.T) {
	for _, tc := range cases {
		if got := Is(tc.ns); got != tc.want {
			t.Errorf("Is(%q) = %v, want %v", tc.ns, got, tc.want)
		}
		if why := Why(tc.ns); (why != "") != tc.want {
			t.Errorf("Why(%q) = %q, want a reason: %v", tc.ns, why, tc.want)
		}
	}
}

// The admission policies apply the rule as CEL: it must say what Is says.
func TestCELAgreesWithIs(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("ns", cel.StringType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(CEL("ns"))
	if iss.Err() != nil {
		t.Fatalf("CEL(ns) = %s does not compile: %v", CEL("ns"), iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		out, _, err := prg.Eval(map[string]any{"ns": tc.ns})
		if err != nil {
			t.Fatalf("%q: %v", tc.ns, err)
		}
		if got := out.Value().(bool); got != tc.want {
			t.Errorf("CEL for %q = %v, want %v (%s)", tc.ns, got, tc.want, CEL("ns"))
		}
	}
}
