package manager

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// --builtin-interpreters is on by default; =false turns the built-ins off; a bad value is an
// error naming the flag.
func TestBuiltinInterpretersFlag(t *testing.T) {
	for _, c := range []struct {
		args    []string
		off     bool
		wantErr bool
	}{
		{nil, false, false},
		{[]string{"--builtin-interpreters"}, false, false},
		{[]string{"--builtin-interpreters=true"}, false, false},
		{[]string{"--builtin-interpreters=false"}, true, false},
		{[]string{"--builtin-interpreters=maybe"}, false, true},
	} {
		var o options
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.bind(fs)
		err := fs.Parse(c.args)
		if (err != nil) != c.wantErr || o.controllers.NoBuiltinInterpreters != c.off {
			t.Errorf("%v: off %v, error %v; want off %v, error %v", c.args, o.controllers.NoBuiltinInterpreters, err, c.off, c.wantErr)
		}
	}
}

// Every manager flag has a row in docs/operations.md's flags table (a row may name several
// flags: `--leader-elect-lease-duration` / `-renew-deadline` / `-retry-period`).
func TestFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| `--") {
			rows = append(rows, strings.SplitN(l, "|", 3)[1])
		}
	}
	if len(rows) < 20 {
		t.Fatalf("docs/operations.md has %d flag rows; is the table still there?", len(rows))
	}
	documented := func(name string) bool {
		for _, r := range rows {
			if strings.Contains(r, "`--"+name+"`") {
				return true
			}
			// `--a-b-x` / `-y`: --a-b-y is documented by the suffix.
			for _, f := range strings.Split(r, "/") {
				f = strings.Trim(strings.TrimSpace(f), "`")
				if strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") && strings.HasSuffix(name, f) {
					return true
				}
			}
		}
		return false
	}
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o.bind(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !documented(f.Name) {
			t.Errorf("--%s is not in docs/operations.md's flags table", f.Name)
		}
	})
}
