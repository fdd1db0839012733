package capijoin

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

func capiCluster(mut func(*clusterv1beta2.Cluster)) *clusterv1beta2.Cluster {
	c := &clusterv1beta2.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "edge-1", Labels: map[string]string{
			wellknown.CAPIJoinLabel: "true", "env": "prod", clusterv1beta2.ClusterNameLabel: "edge-1", "topology.cluster.x-k8s.io/owned": "",
		}},
		Spec: clusterv1beta2.ClusterSpec{InfrastructureRef: clusterv1beta2.ContractVersionedObjectReference{
			APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerCluster", Name: "edge-1"}},
	}
	c.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	if mut != nil {
		mut(c)
	}
	return c
}

func TestDecideAction(t *testing.T) {
	now := metav1.NewTime(time.Now())
	for _, tc := range []struct {
		name string
		mut  func(*clusterv1beta2.Cluster)
		want Action
	}{
		{"labelled, control plane initialized", nil, Join},
		{"initialized by condition only", func(c *clusterv1beta2.Cluster) {
			c.Status.Initialization.ControlPlaneInitialized = nil
			c.Status.Conditions = []metav1.Condition{{Type: clusterv1beta2.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue}}
		}, Join},
		{"control plane not initialized", func(c *clusterv1beta2.Cluster) { c.Status.Initialization.ControlPlaneInitialized = ptr.To(false) }, Wait},
		{"nothing reported yet", func(c *clusterv1beta2.Cluster) { c.Status = clusterv1beta2.ClusterStatus{} }, Wait},
		{"not labelled", func(c *clusterv1beta2.Cluster) { delete(c.Labels, wellknown.CAPIJoinLabel) }, Unjoin},
		{"labelled false", func(c *clusterv1beta2.Cluster) { c.Labels[wellknown.CAPIJoinLabel] = "false" }, Unjoin},
		{"being deleted", func(c *clusterv1beta2.Cluster) { c.DeletionTimestamp = &now }, Unjoin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(capiCluster(tc.mut)); got.Action != tc.want {
				t.Errorf("action %s (%s), want %s", got.Action, got.Why, tc.want)
			}
		})
	}
}

func TestDecideMember(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*clusterv1beta2.Cluster)
		want Member
	}{
		{"defaults: name, provider from the infrastructure, labels but Cluster API's and join's", nil, Member{
			Name: "edge-1", Provider: "docker", Labels: map[string]string{"env": "prod", wellknown.OriginLabel: wellknown.OriginClusterAPI}}},
		{"labels set the name, provider, region, zone and keeping workloads", func(c *clusterv1beta2.Cluster) {
			c.Labels[wellknown.CAPIMemberNameLabel] = "paris"
			c.Labels[wellknown.CAPIProviderLabel] = "ovh"
			c.Labels[wellknown.CAPIKeepWorkloadsLabel] = "true"
			c.Labels["topology.kubernetes.io/region"] = "eu-west-3"
			c.Labels["topology.kubernetes.io/zone"] = "eu-west-3a"
		}, Member{Name: "paris", Provider: "ovh", Region: "eu-west-3", Zones: []string{"eu-west-3a"}, KeepWorkloads: true,
			Labels: map[string]string{"env": "prod", wellknown.OriginLabel: wellknown.OriginClusterAPI,
				"topology.kubernetes.io/region": "eu-west-3", "topology.kubernetes.io/zone": "eu-west-3a"}}},
		{"zones from the failure domains, sorted", func(c *clusterv1beta2.Cluster) {
			c.Spec.InfrastructureRef.Kind = "AWSCluster"
			c.Status.FailureDomains = []clusterv1beta2.FailureDomain{{Name: "us-east-1b"}, {Name: "us-east-1a"}, {Name: "us-east-1b"}}
		}, Member{Name: "edge-1", Provider: "aws", Zones: []string{"us-east-1a", "us-east-1b"},
			Labels: map[string]string{"env": "prod", wellknown.OriginLabel: wellknown.OriginClusterAPI}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Decide(capiCluster(tc.mut)).Member); diff != "" {
				t.Errorf("member (-want +got):\n%s", diff)
			}
		})
	}
}
