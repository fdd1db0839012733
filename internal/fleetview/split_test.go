package fleetview_test

import (
	"testing"

	"github.com/flotilla-io/flotilla/internal/fleetview"
)

func TestSplitKindName(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		kind, name string
	}{
		{[]string{"deploy/web"}, "deploy", "web"},
		{[]string{"deployments.apps", "web"}, "deployments.apps", "web"},
	} {
		kind, name, err := fleetview.SplitKindName(tc.args)
		if err != nil || kind != tc.kind || name != tc.name {
			t.Errorf("%v: %q %q %v", tc.args, kind, name, err)
		}
	}
	for _, args := range [][]string{{"deploy"}, {"deploy/"}, {"/web"}, {"a/b/c"}, {"deploy/web", "x"}, {"a", "b", "c"}} {
		if _, _, err := fleetview.SplitKindName(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
