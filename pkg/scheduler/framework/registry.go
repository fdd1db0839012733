package framework

import (
	"fmt"
	"slices"
)

// Registry is the ordered set of enabled plugins. Plugins run in the order they were
// registered. The zero value is an empty registry ready to use.
type Registry struct {
	plugins []Plugin
}

// NewRegistry registers the plugins in order.
func NewRegistry(plugins ...Plugin) (*Registry, error) {
	r := &Registry{}
	for _, p := range plugins {
		if err := r.Register(p); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds a plugin at the end. The plugin must implement at least one of FilterPlugin,
// ScorePlugin and SelectPlugin, and its name must be new.
func (r *Registry) Register(p Plugin) error {
	if p == nil {
		return fmt.Errorf("register plugin: nil plugin")
	}
	name := p.Name()
	if name == "" {
		return fmt.Errorf("register plugin %T: empty name", p)
	}
	if r.Has(name) {
		return fmt.Errorf("register plugin %q: a plugin of that name is already registered", name)
	}
	_, isFilter := p.(FilterPlugin)
	_, isScore := p.(ScorePlugin)
	_, isSelect := p.(SelectPlugin)
	if !isFilter && !isScore && !isSelect {
		return fmt.Errorf("register plugin %q: %T implements none of FilterPlugin, ScorePlugin, SelectPlugin", name, p)
	}
	r.plugins = append(r.plugins, p)
	return nil
}

// Disable removes the named plugins. Naming a plugin that is not registered is an error, so
// that a typo in a flag does not go unnoticed.
func (r *Registry) Disable(names ...string) error {
	for _, name := range names {
		i := r.index(name)
		if i < 0 {
			return fmt.Errorf("disable plugin %q: no such plugin (registered: %v)", name, r.Names())
		}
		r.plugins = slices.Delete(r.plugins, i, i+1)
	}
	return nil
}

// Has reports whether a plugin of that name is registered.
func (r *Registry) Has(name string) bool { return r.index(name) >= 0 }

// Names returns the names of the registered plugins in order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.plugins))
	for i, p := range r.plugins {
		names[i] = p.Name()
	}
	return names
}

// Filters returns the filter plugins in order.
func (r *Registry) Filters() []FilterPlugin { return pluginsOf[FilterPlugin](r) }

// Scorers returns the score plugins in order.
func (r *Registry) Scorers() []ScorePlugin { return pluginsOf[ScorePlugin](r) }

// Selectors returns the select plugins in order.
func (r *Registry) Selectors() []SelectPlugin { return pluginsOf[SelectPlugin](r) }

func (r *Registry) index(name string) int {
	return slices.IndexFunc(r.plugins, func(p Plugin) bool { return p.Name() == name })
}

func pluginsOf[T Plugin](r *Registry) []T {
	var out []T
	for _, p := range r.plugins {
		if t, ok := p.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
