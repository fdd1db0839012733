package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlag(t *testing.T) {
	tests := []struct {
		value   string
		want    Plugins
		wantErr string
	}{
		{value: "", want: Plugins{}},
		{value: "*", want: Plugins{}},
		{value: "*,-ClusterLocality", want: Plugins{Disabled: []Plugin{{Name: "ClusterLocality"}}}},
		{value: "ClusterAffinity, APIEnablement", want: Plugins{Enabled: []Plugin{{Name: "ClusterAffinity"}, {Name: "APIEnablement"}}, Disabled: []Plugin{{Name: All}}}},
		{value: "*,ClusterLocality=3", want: Plugins{Enabled: []Plugin{{Name: "ClusterLocality", Weight: 3}}}},
		{value: "*,ClusterLocality=x", wantErr: `"ClusterLocality=x": the weight must be a whole number`},
		{value: "*,ClusterLocality=101", wantErr: "plugins.enabled[0].weight: 101 is out of range: want 1 to 100"},
		{value: "*,A,-A", wantErr: "plugins.disabled[0].name: A is both enabled and disabled"},
		{value: "A,A", wantErr: "plugins.enabled[1].name: A is enabled twice"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := ParseFlag(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFlag (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		want    Plugins
		wantErr string
	}{
		{name: "enabled and disabled", file: `
apiVersion: config.flotilla.io/v1alpha1
kind: SchedulerConfiguration
plugins:
  enabled:
  - name: ClusterLocality
    weight: 2
  disabled:
  - name: SpreadConstraint
`, want: Plugins{Enabled: []Plugin{{Name: "ClusterLocality", Weight: 2}}, Disabled: []Plugin{{Name: "SpreadConstraint"}}}},
		{name: "unknown field", file: "apiVersion: config.flotilla.io/v1alpha1\nkind: SchedulerConfiguration\nplugins:\n  enable: []\n", wantErr: `unknown field "enable"`},
		{name: "wrong apiVersion", file: "apiVersion: v1\nkind: SchedulerConfiguration\n", wantErr: `apiVersion "v1": want config.flotilla.io/v1alpha1`},
		{name: "wrong kind", file: "apiVersion: config.flotilla.io/v1alpha1\nkind: KubeSchedulerConfiguration\n", wantErr: `kind "KubeSchedulerConfiguration"`},
		{name: "weight on a disabled plugin", file: "apiVersion: config.flotilla.io/v1alpha1\nkind: SchedulerConfiguration\nplugins:\n  disabled:\n  - {name: A, weight: 2}\n",
			wantErr: "plugins.disabled[0].weight: a disabled plugin has no weight"},
		{name: "not YAML", file: "[", wantErr: "scheduler configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load([]byte(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseFlag(f *testing.F) {
	for _, s := range []string{"*", "*,-A", "A=3,B", "-", "=", ",,,", "A=99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseFlag(s)
		if err == nil {
			if verr := p.Validate(); verr != nil {
				t.Fatalf("ParseFlag(%q) accepted what Validate refuses: %v", s, verr)
			}
		}
	})
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte("apiVersion: config.flotilla.io/v1alpha1\nkind: SchedulerConfiguration\nplugins:\n  enabled:\n  - {name: A, weight: 2}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Load(data)
	})
}
