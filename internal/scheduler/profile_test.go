package scheduler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
	"github.com/flotilla-io/flotilla/pkg/scheduler/config"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// prefer is a user score plugin: the named cluster scores 100, the others 0.
type prefer struct{ cluster string }

func (prefer) Name() string { return "Prefer" }

func (p prefer) NewScorer(*framework.CycleState) (framework.Scorer, error) {
	return func(c *clusterv1alpha1.Cluster) int64 {
		if c.Name == p.cluster {
			return framework.MaxScore
		}
		return 0
	}, nil
}

func TestPluginProfile(t *testing.T) {
	flag := func(v string) config.Plugins {
		p, err := config.ParseFlag(v)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := strings.Join(append(names(DefaultPlugins()), "Prefer"), ",")
	tests := []struct {
		name    string
		plugins config.Plugins
		want    string
		wantErr string
	}{
		{name: "default: all, the extra ones last", want: all},
		{name: "all but one", plugins: flag("*,-ClusterLocality"), want: strings.Replace(all, "ClusterLocality,", "", 1)},
		{name: "only these, and ClusterDeletion", plugins: flag("APIEnablement,Prefer=3"), want: "ClusterDeletion,APIEnablement,Prefer"},
		{name: "unknown name", plugins: flag("*,-Typo"), wantErr: `plugins.disabled[0].name: no plugin is named "Typo" (registered: ClusterDeletion,`},
		{name: "unknown enabled name", plugins: flag("Typo"), wantErr: `plugins.enabled[0].name: no plugin is named "Typo"`},
		{name: "ClusterDeletion stays", plugins: flag("*,-ClusterDeletion"), wantErr: "clusters being deleted are never chosen"},
		{name: "weight on a filter", plugins: flag("*,APIEnablement=2"), wantErr: "plugins.enabled[0].weight: plugin APIEnablement does not score"},
		{name: "invalid", plugins: config.Plugins{Enabled: []config.Plugin{{Name: "Prefer", Weight: 500}}}, wantErr: "plugins.enabled[0].weight: 500 is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Options{ExtraPlugins: []framework.Plugin{prefer{"m1"}}, Plugins: tt.plugins})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(s.Plugins(), ","); got != tt.want {
				t.Errorf("Plugins() = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestScoreWeight: a weighted score plugin outweighs ClusterLocality, which keeps a binding
// where it is.
func TestScoreWeight(t *testing.T) {
	clusters := []*clusterv1alpha1.Cluster{st.NewCluster("m1"), st.NewCluster("m2")}
	spec := st.Deployment(1)
	spec.Placement = &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
		{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 1}}}
	spec = scheduledOn(spec, "m2")
	for _, tt := range []struct {
		flag string
		want string
	}{{"*,-Prefer", "m2"}, {"*,Prefer=2", "m1"}} {
		p, err := config.ParseFlag(tt.flag)
		if err != nil {
			t.Fatal(err)
		}
		s := newScheduler(t, Options{ExtraPlugins: []framework.Plugin{prefer{"m1"}}, Plugins: p})
		got, err := s.Schedule(Input{Spec: spec}, clusters)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(targets(tt.want, 1), got.Clusters); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tt.flag, diff)
		}
	}
}

func names(plugins []framework.Plugin) []string {
	out := make([]string, len(plugins))
	for i, p := range plugins {
		out[i] = p.Name()
	}
	return out
}
