// Package config is the scheduler's plugin configuration: which plugins run and how much
// each score plugin weighs. It is read from a file (--scheduler-config, modelled on the
// plugins section of kube-scheduler's KubeSchedulerConfiguration) or from a flag
// (--scheduler-plugins, Karmada's --plugins syntax). Both yield Plugins, which the scheduler
// applies to the registered plugins (its defaults and the ones a binary adds, see
// pkg/manager) and validates: a name nobody registered, a weight on a plugin that does not
// score, a plugin both enabled and disabled are errors that name the field.
//
// This package is a stable API: fields are only added.
package config

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	// APIVersion is the configuration file's apiVersion.
	APIVersion = "config.flotilla.io/v1alpha1"
	// Kind is the configuration file's kind.
	Kind = "SchedulerConfiguration"
	// All stands for every registered plugin in Enabled or Disabled.
	All = "*"
	// MaxWeight bounds a score plugin's weight.
	MaxWeight = 100
)

// Configuration is the --scheduler-config file:
//
//	apiVersion: config.flotilla.io/v1alpha1
//	kind: SchedulerConfiguration
//	plugins:
//	  enabled:
//	  - name: ClusterLocality
//	    weight: 2
//	  disabled:
//	  - name: SpreadConstraint
type Configuration struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Plugins    Plugins `json:"plugins"`
}

// Plugins says which plugins run. Every registered plugin runs unless Disabled names it (or
// "*", all of them); Enabled turns plugins back on after a "*" and sets score weights.
type Plugins struct {
	// Enabled plugins run, with their weights.
	Enabled []Plugin `json:"enabled,omitempty"`
	// Disabled plugins do not run; "*" disables all but the Enabled ones.
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin.
type Plugin struct {
	// Name is the plugin's registered name.
	Name string `json:"name"`
	// Weight multiplies a score plugin's scores (1 to MaxWeight; 0 means 1).
	Weight int32 `json:"weight,omitempty"`
}

// Load reads a configuration file. Unknown fields, a wrong apiVersion or kind, and bad
// plugin entries are errors that name the field.
func Load(data []byte) (Plugins, error) {
	var c Configuration
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), &c); err != nil {
		return Plugins{}, fmt.Errorf("scheduler configuration: %w", err)
	}
	if c.APIVersion != APIVersion {
		return Plugins{}, fmt.Errorf("scheduler configuration: apiVersion %q: want %s", c.APIVersion, APIVersion)
	}
	if c.Kind != Kind {
		return Plugins{}, fmt.Errorf("scheduler configuration: kind %q: want %s", c.Kind, Kind)
	}
	return c.Plugins, c.Plugins.Validate()
}

// ParseFlag reads --scheduler-plugins: a comma-separated list where "*" is every registered
// plugin, "Name" enables a plugin, "Name=3" enables a score plugin with weight 3, and "-Name"
// disables one. Without "*", only the plugins listed run: "*,-ClusterLocality" runs all but
// one, "ClusterAffinity,APIEnablement" only those two (and ClusterDeletion, which always
// runs). An empty value is every plugin.
func ParseFlag(value string) (Plugins, error) {
	var p Plugins
	all := false
	for item := range strings.SplitSeq(value, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case item == All:
			all = true
		case strings.HasPrefix(item, "-"):
			p.Disabled = append(p.Disabled, Plugin{Name: strings.TrimPrefix(item, "-")})
		default:
			name, weight, hasWeight := strings.Cut(item, "=")
			pl := Plugin{Name: name}
			if hasWeight {
				w, err := strconv.ParseInt(weight, 10, 32)
				if err != nil {
					return Plugins{}, fmt.Errorf("--scheduler-plugins: %q: the weight must be a whole number", item)
				}
				pl.Weight = int32(w)
			}
			p.Enabled = append(p.Enabled, pl)
		}
	}
	if !all && len(p.Enabled) > 0 {
		p.Disabled = append([]Plugin{{Name: All}}, p.Disabled...)
	}
	if err := p.Validate(); err != nil {
		return Plugins{}, fmt.Errorf("--scheduler-plugins: %w", err)
	}
	return p, nil
}

// Validate checks the entries on their own: names set, weights in range, no plugin both
// enabled and disabled, none listed twice. Whether the names are registered is checked by
// the scheduler.
func (p Plugins) Validate() error {
	enabled := map[string]bool{}
	for i, pl := range p.Enabled {
		field := fmt.Sprintf("plugins.enabled[%d]", i)
		switch {
		case pl.Name == "" || pl.Name == All:
			return fmt.Errorf("%s.name: a plugin name is required (%q is only for disabled)", field, All)
		case pl.Weight < 0 || pl.Weight > MaxWeight:
			return fmt.Errorf("%s.weight: %d is out of range: want 1 to %d (0: 1)", field, pl.Weight, MaxWeight)
		case enabled[pl.Name]:
			return fmt.Errorf("%s.name: %s is enabled twice", field, pl.Name)
		}
		enabled[pl.Name] = true
	}
	disabled := map[string]bool{}
	for i, pl := range p.Disabled {
		field := fmt.Sprintf("plugins.disabled[%d]", i)
		switch {
		case pl.Name == "":
			return fmt.Errorf("%s.name: a plugin name is required", field)
		case pl.Weight != 0:
			return fmt.Errorf("%s.weight: a disabled plugin has no weight", field)
		case enabled[pl.Name]:
			return fmt.Errorf("%s.name: %s is both enabled and disabled", field, pl.Name)
		case disabled[pl.Name]:
			return fmt.Errorf("%s.name: %s is disabled twice", field, pl.Name)
		}
		disabled[pl.Name] = true
	}
	return nil
}
