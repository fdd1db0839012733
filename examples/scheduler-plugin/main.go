// Command scheduler-plugin is the Flotilla manager built with an extra scheduler plugin,
// CostAware (package costaware): every flag of the manager works, and the plugin is enabled,
// disabled and weighted like the built-in ones, for example
//
//	go build -o manager-costaware ./examples/scheduler-plugin
//	./manager-costaware --scheduler-plugins='*,CostAware=3'
//
// In a module of your own, require github.com/flotilla-io/flotilla and import only its pkg/
// packages, as this file and package costaware do.
package main

import (
	"github.com/flotilla-io/flotilla/examples/scheduler-plugin/costaware"
	"github.com/flotilla-io/flotilla/pkg/manager"
)

func main() {
	manager.Main(manager.WithSchedulerPlugins(costaware.New()))
}
