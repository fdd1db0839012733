package localcluster_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The integration specs start real etcd and kube-apiserver processes (and, for the full
// member, kube-controller-manager, kube-scheduler and kwok) from bin/k8s; build them first
// with `bash hack/k8s-bins.sh bin/k8s`.
func TestLocalcluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "localcluster")
}
