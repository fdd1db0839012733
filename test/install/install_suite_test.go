// Package install tests the install path users take: it applies what dist/install.yaml holds
// (rendered from config/default by the same code as `make build-installer`) to a local host
// cluster, runs the real manager binary out of cluster as the installed ServiceAccount (no
// other grant than the installed RBAC), registers three members and plays the weighted-pipy
// scenario. A permission the manifests miss shows up as a "forbidden" error in the manager's
// log, which fails the suite.
package install

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet of real apiservers and builds the manager")
	}
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Install suite")
}
