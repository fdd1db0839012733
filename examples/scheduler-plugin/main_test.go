package main

import (
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/examples/scheduler-plugin/costaware"
	"github.com/flotilla-io/flotilla/pkg/manager"
)

// TestManagerFlags: the manager built with the plugin knows its name, and a typo is refused
// at start with the registered names.
func TestManagerFlags(t *testing.T) {
	with := manager.WithSchedulerPlugins(costaware.New())
	for _, args := range [][]string{nil, {"--scheduler-plugins=*,CostAware=3"}, {"--scheduler-plugins=*,-CostAware"}} {
		if err := manager.Check(args, with); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	err := manager.Check([]string{"--scheduler-plugins=*,CostAwre=3"}, with)
	if err == nil || !strings.Contains(err.Error(), `no plugin is named "CostAwre"`) || !strings.Contains(err.Error(), "CostAware") {
		t.Errorf("typo: err = %v", err)
	}
	if err := manager.Check([]string{"--scheduler-plugins=CostAware"}); err == nil {
		t.Errorf("the stock manager accepted CostAware")
	}
}
