package costaware_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/examples/scheduler-plugin/costaware"
	"github.com/flotilla-io/flotilla/pkg/scheduler/config"
	"github.com/flotilla-io/flotilla/pkg/scheduler/dryrun"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

func cluster(name string, labels map[string]string) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}}}
	return c
}

func TestScore(t *testing.T) {
	for labels, want := range map[string]int64{"": 50, "10": 90, "250": 0, "-3": 50, "x": 50} {
		c := cluster("c", map[string]string{costaware.CostLabel: labels})
		if got := costaware.Score(c); got != want {
			t.Errorf("cost %q: score %d, want %d", labels, got, want)
		}
	}
}

// TestChangesPlacement: the same binding lands elsewhere with the plugin enabled, through the
// public dry run of a scheduling cycle.
func TestChangesPlacement(t *testing.T) {
	clusters := []*clusterv1alpha1.Cluster{
		cluster("pricey", map[string]string{costaware.CostLabel: "90"}),
		cluster("cheap", map[string]string{costaware.CostLabel: "5"}),
		cluster("frozen", map[string]string{costaware.CostLabel: "0", costaware.FrozenLabel: "true"}),
	}
	// One cluster of the three.
	spec := &workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cfg", UID: "uid-1"},
		Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 1}}},
	}
	place := func(plugins string, extra ...framework.Plugin) []workv1alpha2.TargetCluster {
		p, err := config.ParseFlag(plugins)
		if err != nil {
			t.Fatal(err)
		}
		report, err := dryrun.Run(dryrun.Options{ExtraPlugins: extra, Plugins: p}, spec, clusters)
		if err != nil {
			t.Fatal(err)
		}
		if report.Error != "" {
			t.Fatalf("%s: %s", plugins, report.Error)
		}
		return report.Clusters
	}
	without := place("*")
	with := place("*,CostAware=3", costaware.New())
	if diff := cmp.Diff([]workv1alpha2.TargetCluster{{Name: "cheap"}}, with); diff != "" {
		t.Errorf("with CostAware (-want +got):\n%s", diff)
	}
	if cmp.Equal(with, without) {
		t.Errorf("CostAware changed nothing: %v", without)
	}
}
