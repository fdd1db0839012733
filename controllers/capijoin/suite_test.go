package capijoin_test

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clusterv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/controllers/capijoin"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
)

// The suite installs Cluster API's Cluster CRD into the host (testdata/, generated from the
// sigs.k8s.io/cluster-api/api module's types, see the go:generate line) and stands in for a
// Cluster API provider: it creates the Cluster, its kubeconfig Secret with the admin
// kubeconfig of a local member, and reports the control plane initialized, as Cluster API
// does. The cluster controller and the Cluster API join controller run in-process; the host
// runs a kube-controller-manager, so that unjoined members' execution namespaces go.
//
//go:generate sh -c "controller-gen crd paths=sigs.k8s.io/cluster-api/api/core/v1beta2 output:crd:dir=$(mktemp -d /tmp/capi-crds.XXXX) && cp /tmp/capi-crds.*/cluster.x-k8s.io_clusters.yaml testdata/"
var (
	env *fleettest.Env
	mgr ctrl.Manager
)

func TestClusterAPIJoin(t *testing.T) {
	fleettest.RunSuite(t, "Cluster API join suite", "a host and two member clusters")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "capijoin", Members: 2, ControllerManager: true})
	_, err := env.Fleet.Host.InstallCRDs(ctx, filepath.Join("testdata", "cluster.x-k8s.io_clusters.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(clusterv1beta2.AddToScheme(env.Scheme)).To(Succeed())
	mgr = env.NewManager()
	env.SetupClusterController(mgr)
	started, err := (&capijoin.Reconciler{UnjoinTimeout: 20 * time.Second}).SetupWithManager(mgr)
	Expect(err).NotTo(HaveOccurred())
	Expect(started).To(BeTrue(), "Cluster API's Cluster kind is served: the controller runs")
	fleettest.StartManager(mgr)
	env.CreateNamespace(ctx, "team-a", nil)
}, NodeTimeout(5*time.Minute))
