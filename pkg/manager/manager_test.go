package manager

import (
	"flag"
	"io"
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
