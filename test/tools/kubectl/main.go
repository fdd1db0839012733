// Command kubectl is kubectl itself, built from k8s.io/kubectl at the version in go.mod. The
// machine has no kubectl binary; the doc-blocks test (test/e2e/docs_test.go) builds this one
// so that the commands in docs/ run exactly as a reader types them, plugins included
// (kubectl-flotilla on PATH is `kubectl flotilla`).
package main

import (
	"os"

	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	if err := cmd.NewDefaultKubectlCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
