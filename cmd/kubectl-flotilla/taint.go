package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/taintedit"
)

// writeClient is an uncached client of the host with Flotilla's scheme.
func (h *hostFlags) writeClient() (client.Client, error) {
	cfg, err := h.config()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: flotillascheme.New()})
}

// parseClusterArg accepts NAME, cluster/NAME or clusters/NAME.
func parseClusterArg(arg string) (string, error) {
	name := arg
	if kind, n, ok := strings.Cut(arg, "/"); ok {
		switch strings.ToLower(kind) {
		case "cluster", "clusters", "clusters.cluster.karmada.io":
			name = n
		default:
			return "", fmt.Errorf("%q is not a cluster: give NAME or cluster/NAME", arg)
		}
	}
	if name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("%q is not a cluster name", arg)
	}
	return name, nil
}

// updateTaints applies the changes to the Cluster and prints what happened, kubectl style.
func updateTaints(ctx context.Context, cmd *cobra.Command, host *hostFlags, arg string, changes taintedit.Changes, overwrite bool, done func(taintedit.Outcome) string) error {
	name, err := parseClusterArg(arg)
	if err != nil {
		return err
	}
	c, err := host.writeClient()
	if err != nil {
		return err
	}
	outcome, err := taintedit.Update(ctx, c, name, changes, overwrite, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s %s\n", name, done(outcome))
	return nil
}

func cordonTaint() corev1.Taint {
	return corev1.Taint{Key: wellknown.TaintClusterCordoned, Effect: corev1.TaintEffectNoSchedule}
}

func newCordonCommand(host *hostFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cordon CLUSTER",
		Short: "Mark a member cluster unschedulable (a NoSchedule taint)",
		Long: `Mark a member cluster unschedulable: it gets the NoSchedule taint ` + wellknown.TaintClusterCordoned + `.
Nothing new is scheduled there, unless a policy tolerates the taint. What already runs there stays
(NoSchedule does not evict): move it with 'kubectl flotilla rebalance'.`,
		Example: `  kubectl flotilla cordon member2
  kubectl flotilla rebalance deployment/web -n shop --wait`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return updateTaints(cmd.Context(), cmd, host, args[0], taintedit.Changes{Add: []corev1.Taint{cordonTaint()}}, false,
				func(o taintedit.Outcome) string {
					if o == taintedit.Unchanged {
						return "already cordoned"
					}
					return "cordoned"
				})
		},
	}
}

func newUncordonCommand(host *hostFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "uncordon CLUSTER",
		Short: "Mark a member cluster schedulable again",
		Long: `Remove the taint 'kubectl flotilla cordon' put on a member cluster. Replicas do not come back by
themselves: a Divided workload is spread over the cluster again at its next rebalance.`,
		Example: `  kubectl flotilla uncordon member2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := cordonTaint()
			return updateTaints(cmd.Context(), cmd, host, args[0],
				taintedit.Changes{Remove: []taintedit.Removal{{Key: t.Key, Effect: t.Effect}}, IgnoreMissing: true}, false,
				func(o taintedit.Outcome) string {
					if o == taintedit.Unchanged {
						return "already uncordoned"
					}
					return "uncordoned"
				})
		},
	}
}

func newTaintCommand(host *hostFlags) *cobra.Command {
	var overwrite bool
	cmd := &cobra.Command{
		Use:   "taint CLUSTER KEY[=VALUE]:EFFECT ... [KEY[:EFFECT]-]",
		Short: "Add or remove taints of a member cluster",
		Long: `Add or remove taints of a member cluster, as 'kubectl taint' does for nodes.

A taint is key=value:Effect or key:Effect; the key is a qualified name (an optional DNS prefix and
'/'), the value a label value, and Effect is NoSchedule, PreferNoSchedule or NoExecute. A trailing
'-' removes: key- removes every taint with the key, key:Effect- the one with that effect. A taint
with the key and effect of an existing one replaces it only with --overwrite.

NoSchedule keeps new placements off the cluster; NoExecute also moves away what is placed there,
for bindings whose policy does not tolerate it. The cluster controller's own taints
(cluster.karmada.io/not-ready, .../unreachable) are kept; the update fails rather than loses a
concurrent change.`,
		Example: `  kubectl flotilla taint member1 dedicated=gpu:NoSchedule
  kubectl flotilla taint member1 dedicated=cpu:NoSchedule --overwrite
  kubectl flotilla taint member1 dedicated:NoSchedule-
  kubectl flotilla taint member1 dedicated-`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes, err := taintedit.Parse(args[1:])
			if err != nil {
				return err
			}
			return updateTaints(cmd.Context(), cmd, host, args[0], changes, overwrite, func(o taintedit.Outcome) string {
				return string(o)
			})
		},
	}
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "Replace a taint that has the same key and effect and another value")
	return cmd
}
