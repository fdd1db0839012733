package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/internal/fleetview"
	"github.com/flotilla-io/flotilla/internal/migrate"
)

func newPromoteCommand(host *hostFlags) *cobra.Command {
	ns := &namespaceFlags{host: host}
	o := migrate.PromoteOptions{}
	cmd := &cobra.Command{
		Use:   "promote KIND/NAME --cluster CLUSTER [-n NS] [--dependencies]",
		Short: "Bring a workload that runs in one member under the fleet, without restarting it",
		Long: `Make a workload that already runs in member CLUSTER the fleet's, as karmadactl promote does:
its template is created in the host from the member object as it is, with a PropagationPolicy
promote-KIND-NAME pinned to CLUSTER with conflictResolution: Overwrite, so that the member
object is taken over in place (same object, nothing in it changes, no pod restarts). Edit the
template or the policy afterwards to spread it further.

--dependencies also promotes the ConfigMaps, Secrets, ServiceAccount and claims the workload
uses, and propagates them with it (propagateDeps). The member is read through the host's
credential for it (Push members). The namespace must be opted in on the host (every template
in it is held there), or --opt-in opts it in.`,
		Example: `  kubectl flotilla promote deployment/web -n shop --cluster member2 --dependencies
  kubectl flotilla promote statefulset/db -n shop --cluster member1 --opt-in --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, ok := strings.Cut(args[0], "/")
			if !ok || kind == "" || name == "" {
				return fmt.Errorf("%q: expected KIND/NAME", args[0])
			}
			if o.Cluster == "" {
				return fmt.Errorf("--cluster is required: the member the workload runs in")
			}
			namespace, err := ns.resolve()
			if err != nil {
				return err
			}
			cfg, err := host.config()
			if err != nil {
				return err
			}
			h, err := fleetview.NewHost(cfg)
			if err != nil {
				return err
			}
			mapping, err := h.Resolve(kind)
			if err != nil {
				return err
			}
			o.GVK, o.Name = mapping.GroupVersionKind, name
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				o.Namespace = namespace
			}
			c := &clusterv1alpha1.Cluster{}
			if err := h.Client.Get(cmd.Context(), client.ObjectKey{Name: o.Cluster}, c); err != nil {
				return fmt.Errorf("get cluster %q: %w", o.Cluster, err)
			}
			mcfg, err := h.MemberConfig(cmd.Context(), c)
			if err != nil {
				return err
			}
			s := flotillascheme.New()
			if o.Member, err = client.New(mcfg, client.Options{Scheme: s}); err != nil {
				return err
			}
			if o.Host, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
				return err
			}
			items, err := migrate.Promote(cmd.Context(), o)
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ACTION\tKIND\tNAME\tREASON")
			for _, it := range items {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", it.Action, it.Kind, strings.TrimPrefix(it.Namespace+"/"+it.Name, "/"), it.Reason)
			}
			_ = w.Flush()
			if err == nil && !o.DryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "Promoted. Watch it: kubectl flotilla status %s -n %s\n", args[0], o.Namespace)
			}
			return err
		},
	}
	ns.add(cmd, false)
	f := cmd.Flags()
	f.StringVar(&o.Cluster, "cluster", "", "The member the workload runs in (required)")
	f.BoolVar(&o.Dependencies, "dependencies", false, "Also promote the ConfigMaps, Secrets, ServiceAccount and claims it uses, and propagate them with it")
	f.BoolVar(&o.OptIn, "opt-in", false, "Opt the namespace in on the host if it is not")
	f.BoolVar(&o.DryRun, "dry-run", false, "Write nothing; print what would be created")
	return cmd
}
