package fleetview_test

import (
	"net"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/fleetview"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// The suite runs no controller: it starts a host and two apiserver-only members, joins the
// members as `kubectl flotilla join` does, and writes what the controllers would (Cluster
// status, bindings, Works and their status, member objects) by hand, then checks what the
// views print.
var (
	env  *fleettest.Env
	host *fleetview.Host
	// silent is an endpoint that accepts connections and never answers.
	silent net.Listener
)

func TestFleetView(t *testing.T) {
	fleettest.RunSuite(t, "Fleet view suite", "a host and two member clusters")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = fleettest.Start(ctx, fleettest.Options{Name: "fleetview", Members: 2})
	env.JoinMembers(ctx)
	for _, n := range env.MemberNames() {
		setReady(ctx, n, metav1.ConditionTrue)
		env.CreateNamespace(ctx, wellknown.ExecutionNamespace(n), nil)
	}
	var err error
	host, err = fleetview.NewHost(env.Fleet.Host.RESTConfig())
	Expect(err).NotTo(HaveOccurred())

	silent, err = net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	held := make(chan net.Conn, 100)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				close(held)
				return
			}
			held <- c
		}
	}()
	DeferCleanup(func() {
		silent.Close()
		for c := range held {
			c.Close()
		}
	})
}, NodeTimeout(3*time.Minute))

// setReady writes the Cluster's Ready condition, as the cluster controller would.
func setReady(ctx SpecContext, name string, status metav1.ConditionStatus) {
	GinkgoHelper()
	c := &clusterv1alpha1.Cluster{}
	Eventually(func(g Gomega) {
		g.Expect(env.Host.Get(ctx, clientKey(name), c)).To(Succeed())
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: wellknown.ClusterConditionReady, Status: status,
			Reason: wellknown.ClusterReasonReady, Message: "cluster is healthy and ready to accept workloads"})
		g.Expect(env.Host.Status().Update(ctx, c)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

// addCluster creates a Ready Cluster at endpoint with a token Secret, joined by hand.
func addCluster(ctx SpecContext, name, endpoint string) {
	GinkgoHelper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: wellknown.SystemNamespace, Name: name},
		Data: map[string][]byte{wellknown.SecretKeyToken: []byte("token")}}
	Expect(env.Host.Create(ctx, s)).To(Succeed())
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{
		SyncMode: clusterv1alpha1.Push, APIEndpoint: endpoint, InsecureSkipTLSVerification: true,
		SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: s.Namespace, Name: s.Name}}}
	Expect(env.Host.Create(ctx, c)).To(Succeed())
	setReady(ctx, name, metav1.ConditionTrue)
	DeferCleanup(func(ctx SpecContext) {
		Expect(env.Host.Delete(ctx, c)).To(Succeed())
		Expect(env.Host.Delete(ctx, s)).To(Succeed())
	})
}

type (
	clusterv1alpha1Cluster = clusterv1alpha1.Cluster
	nodeSummary            = clusterv1alpha1.NodeSummary
	resourceSummary        = clusterv1alpha1.ResourceSummary
)

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }
