// Package taintedit is the logic of the plugin's taint, cordon and uncordon commands: it
// parses taint arguments in kubectl taint's syntax, applies them to a Cluster's taints, and
// writes the result with an optimistic lock so that a concurrent change (the cluster
// controller's own NotReady/Unreachable taints, another user) is never lost.
package taintedit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Effects are the taint effects accepted, as kubectl taint accepts them.
var Effects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// Removal is a taint to remove: every taint with Key, and with Effect when it is set.
type Removal struct {
	Key    string
	Effect corev1.TaintEffect
}

func (r Removal) String() string {
	if r.Effect == "" {
		return r.Key
	}
	return r.Key + ":" + string(r.Effect)
}

// Changes are what a taint command asks for.
type Changes struct {
	Add    []corev1.Taint
	Remove []Removal
	// IgnoreMissing makes removing a taint that is not there a no-op rather than an error
	// (uncordon).
	IgnoreMissing bool
}

// Parse reads taint arguments as kubectl taint does: "key=value:Effect" or "key:Effect" adds
// a taint; "key-", "key:Effect-" (or "key=value:Effect-", the value ignored) removes taints.
// Keys are qualified names (an optional DNS prefix and "/"), values are label values, and
// the effect is NoSchedule, PreferNoSchedule or NoExecute. It rejects an argument that adds a
// key and effect twice, or adds and removes the same one.
func Parse(args []string) (Changes, error) {
	var c Changes
	if len(args) == 0 {
		return c, errors.New("at least one taint update is required")
	}
	for _, arg := range args {
		if spec, ok := strings.CutSuffix(arg, "-"); ok {
			r, err := parseRemoval(spec, arg)
			if err != nil {
				return Changes{}, err
			}
			c.Remove = append(c.Remove, r)
			continue
		}
		t, err := parseTaint(arg)
		if err != nil {
			return Changes{}, err
		}
		for _, prev := range c.Add {
			if prev.Key == t.Key && prev.Effect == t.Effect {
				return Changes{}, fmt.Errorf("duplicated taints with the same key and effect: %s", arg)
			}
		}
		c.Add = append(c.Add, t)
	}
	for _, t := range c.Add {
		for _, r := range c.Remove {
			if r.Key == t.Key && (r.Effect == "" || r.Effect == t.Effect) {
				return Changes{}, fmt.Errorf("cannot both add and remove taint %s:%s", t.Key, t.Effect)
			}
		}
	}
	return c, nil
}

func parseTaint(arg string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(arg, ":")
	if !ok || strings.Contains(effect, ":") {
		return corev1.Taint{}, fmt.Errorf("invalid taint spec %q: expected key[=value]:Effect, or key[:Effect]- to remove", arg)
	}
	key, value, _ := strings.Cut(kv, "=")
	if err := validate(arg, key, value, effect, true); err != nil {
		return corev1.Taint{}, err
	}
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}

func parseRemoval(spec, arg string) (Removal, error) {
	kv, effect, hasEffect := strings.Cut(spec, ":")
	if hasEffect && strings.Contains(effect, ":") {
		return Removal{}, fmt.Errorf("invalid taint spec %q: expected key[=value]:Effect, or key[:Effect]- to remove", arg)
	}
	key, value, _ := strings.Cut(kv, "=")
	if err := validate(arg, key, value, effect, hasEffect); err != nil {
		return Removal{}, err
	}
	return Removal{Key: key, Effect: corev1.TaintEffect(effect)}, nil
}

func validate(arg, key, value, effect string, needEffect bool) error {
	if key == "" {
		return fmt.Errorf("invalid taint spec %q: the key is empty", arg)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("invalid taint spec %q: invalid key %q: %s", arg, key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return fmt.Errorf("invalid taint spec %q: invalid value %q: %s", arg, value, strings.Join(errs, "; "))
	}
	if needEffect && !slices.Contains(Effects, corev1.TaintEffect(effect)) {
		return fmt.Errorf("invalid taint spec %q: invalid taint effect %q: use NoSchedule, PreferNoSchedule or NoExecute", arg, effect)
	}
	return nil
}

// Outcome says what Apply did.
type Outcome string

const (
	// Tainted: taints were added and none removed.
	Tainted Outcome = "tainted"
	// Untainted: taints were removed and none added.
	Untainted Outcome = "untainted"
	// Modified: taints were added or changed and others removed.
	Modified Outcome = "modified"
	// Unchanged: the taints already were as asked.
	Unchanged Outcome = "unchanged"
)

// Apply returns the taints with the changes made. A taint with the key and effect of one
// added is replaced only with overwrite (otherwise it is an error, as in kubectl); adding a
// taint identical to one present changes nothing. Removing a taint that is not there is an
// error. NoExecute taints added get TimeAdded now. The input is not modified.
func Apply(current []corev1.Taint, c Changes, overwrite bool, now time.Time) ([]corev1.Taint, Outcome, error) {
	out := slices.Clone(current)
	added, removed := false, false
	for _, r := range c.Remove {
		n := len(out)
		out = slices.DeleteFunc(out, func(t corev1.Taint) bool {
			return t.Key == r.Key && (r.Effect == "" || t.Effect == r.Effect)
		})
		if len(out) == n {
			if c.IgnoreMissing {
				continue
			}
			return nil, "", fmt.Errorf("taint %q not found", r.String())
		}
		removed = true
	}
	var conflicts []string
	for _, t := range c.Add {
		i := slices.IndexFunc(out, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect })
		if t.Effect == corev1.TaintEffectNoExecute {
			t.TimeAdded = &metav1.Time{Time: now.Truncate(time.Second)}
		}
		switch {
		case i < 0:
			out = append(out, t)
			added = true
		case out[i].Value == t.Value:
			// already there
		case !overwrite:
			conflicts = append(conflicts, t.Key+":"+string(t.Effect))
		default:
			out[i] = t
			added = true
		}
	}
	if len(conflicts) > 0 {
		return nil, "", fmt.Errorf("cluster already has taint(s) %s with other value(s) and --overwrite is false", strings.Join(conflicts, ", "))
	}
	switch {
	case added && removed:
		return out, Modified, nil
	case added:
		return out, Tainted, nil
	case removed:
		return out, Untainted, nil
	}
	return current, Unchanged, nil
}

// Update reads the Cluster, applies the changes and writes its taints with a merge patch
// that carries the resourceVersion read: if the Cluster changed in between, the patch
// conflicts and the update is made again on the new version.
func Update(ctx context.Context, c client.Client, name string, changes Changes, overwrite bool, now time.Time) (Outcome, error) {
	var outcome Outcome
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cluster := &clusterv1alpha1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
			return err
		}
		taints, o, err := Apply(cluster.Spec.Taints, changes, overwrite, now)
		if err != nil {
			return err
		}
		outcome = o
		if o == Unchanged {
			return nil
		}
		patched := cluster.DeepCopy()
		patched.Spec.Taints = taints
		return c.Patch(ctx, patched, client.MergeFromWithOptions(cluster, client.MergeFromWithOptimisticLock{}))
	})
	return outcome, err
}
