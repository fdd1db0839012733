// Package crd tests the CRDs' schemas, CEL rules, defaults and printer columns against a real
// kube-apiserver started by internal/localcluster.
package crd

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/internal/localcluster"
)

var (
	host      *localcluster.Cluster
	hostCfg   *rest.Config
	k8sClient client.Client
)

func TestCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "CRD schema suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	host, err = localcluster.Start(ctx, localcluster.Options{Name: "crd-host", Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(host.Stop)

	_, err = host.InstallCRDs(ctx, filepath.Join("..", "..", "config", "crd", "bases"))
	Expect(err).NotTo(HaveOccurred())

	hostCfg = host.RESTConfig()
	k8sClient, err = client.New(hostCfg, client.Options{Scheme: flotillascheme.New()})
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(3*60e9))
