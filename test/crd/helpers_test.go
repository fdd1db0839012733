package crd

import (
	. "github.com/onsi/gomega"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

func withCodec(cfg *rest.Config) *rest.Config {
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return cfg
}

func discoveryFor(cfg *rest.Config) discovery.DiscoveryInterface {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return dc
}
