package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/migrate"
)

func newMigrateCommand(host *hostFlags) *cobra.Command {
	var (
		fromKubeconfig, fromContext, lease, reportPath string
		memberKubeconfigs                              []string
		o                                              migrate.Options
	)
	cmd := &cobra.Command{
		Use:   "migrate --from-kubeconfig KARMADA --namespaces NS,... [--member-kubeconfig NAME=FILE]...",
		Short: "Move a running Karmada fleet into the host without restarting a pod",
		Long: `Move a Karmada fleet into the host. It reads the Karmada control plane (--from-kubeconfig;
read only) and creates in the host, in order: the namespaces to move, opted in (and waits
until the host hold is in force in each); the Clusters (a Push member is joined with a fresh
least-privilege credential through --member-kubeconfig NAME=FILE, or through Karmada's own
credential for it with --use-karmada-credentials; its labels, taints, provider, region and
zones are kept; a Pull member gets the commands to run in it); the
ResourceInterpreterCustomizations, ClusterTaintPolicies, ClusterOverridePolicies,
ClusterPropagationPolicies, and the OverridePolicies, PropagationPolicies and
MultiClusterServices of the namespaces moved; then the resource templates Karmada propagates
in those namespaces (those its ResourceBindings name).

Each template is annotated with its UID in Karmada (flotilla.io/adopt-karmada-uid): the member
objects Karmada made for it are adopted in place (same object, same pods; Karmada's labels,
annotations and field managers replaced by Flotilla's). Member objects Karmada did not make,
or made for another template, stay Conflicts.

It refuses to run while Karmada's controller-manager holds its leader lease (--karmada-lease,
default karmada-system/karmada-controller-manager), so that two control planes never write the
same member objects; stop it (and every karmada-agent) first, or pass --karmada-stopped.
It only creates: what the host has already is left as it is, so running it again changes
nothing. --dry-run writes nothing and also says, for each member object of the templates
moved, whether it will be adopted, created, or a conflict. The report (every object and what
became of it) is written to --report.`,
		Example: `  # See what would happen:
  kubectl flotilla migrate --from-kubeconfig karmada.kubeconfig --namespaces shop,payments \
    --member-kubeconfig member1=m1.kubeconfig --member-kubeconfig member2=m2.kubeconfig --dry-run
  # Stop Karmada, then move:
  kubectl --kubeconfig karmada-host.kubeconfig -n karmada-system scale deployment karmada-controller-manager --replicas=0
  kubectl flotilla migrate --from-kubeconfig karmada.kubeconfig --namespaces shop,payments \
    --member-kubeconfig member1=m1.kubeconfig --member-kubeconfig member2=m2.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fromKubeconfig == "" {
				return fmt.Errorf("--from-kubeconfig is required: the kubeconfig of the Karmada control plane (karmada-apiserver)")
			}
			var err error
			if o.Lease, err = parseLease(lease); err != nil {
				return err
			}
			if o.MemberConfigs, err = memberConfigs(memberKubeconfigs); err != nil {
				return err
			}
			scheme := flotillascheme.New()
			karmadaCfg, err := join.LoadKubeconfig(fromKubeconfig, fromContext)
			if err != nil {
				return fmt.Errorf("Karmada kubeconfig: %w", err)
			}
			if o.Karmada, err = client.New(karmadaCfg, client.Options{Scheme: scheme}); err != nil {
				return err
			}
			if o.HostConfig, err = host.config(); err != nil {
				return err
			}
			if o.Host, err = client.New(o.HostConfig, client.Options{Scheme: scheme}); err != nil {
				return err
			}
			report, runErr := migrate.Run(cmd.Context(), o)
			if report == nil {
				return runErr
			}
			printReport(cmd, report)
			if err := writeReport(reportPath, report); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Report written to %s.\n", reportPath)
			return runErr
		},
	}
	f := cmd.Flags()
	f.StringVar(&fromKubeconfig, "from-kubeconfig", "", "Kubeconfig of the Karmada control plane (karmada-apiserver) to move from (required)")
	f.StringVar(&fromContext, "from-context", "", "Context of the Karmada kubeconfig (default: its current context)")
	f.StringSliceVar(&o.Namespaces, "namespaces", nil, "Namespaces whose templates and namespaced policies move (comma-separated)")
	f.StringArrayVar(&memberKubeconfigs, "member-kubeconfig", nil, "NAME=FILE: admin kubeconfig of the Push member NAME, to join it and to read its objects (repeat per member)")
	f.BoolVar(&o.UseKarmadaCredentials, "use-karmada-credentials", false, "Reach Push members without --member-kubeconfig through the credential Karmada has for them")
	f.BoolVar(&o.KarmadaStopped, "karmada-stopped", false, "Skip the check of Karmada's leader lease: its controller-manager and agents are stopped")
	f.StringVar(&lease, "karmada-lease", migrate.DefaultLease.String(), "NAMESPACE/NAME of the leader lease of Karmada's controller-manager")
	f.BoolVar(&o.DryRun, "dry-run", false, "Write nothing; print (and report) what would be done")
	f.StringVar(&reportPath, "report", "migration-report.yaml", "Where to write the report")
	f.DurationVar(&o.HoldTimeout, "hold-timeout", 2*time.Minute, "How long to wait for the host hold in each namespace opted in")
	return cmd
}

func parseLease(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("--karmada-lease %q: want NAMESPACE/NAME", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

func memberConfigs(flags []string) (map[string]*rest.Config, error) {
	out := map[string]*rest.Config{}
	for _, f := range flags {
		name, file, ok := strings.Cut(f, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("--member-kubeconfig %q: want NAME=FILE", f)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--member-kubeconfig: %s given twice", name)
		}
		cfg, err := join.LoadKubeconfig(file, "")
		if err != nil {
			return nil, fmt.Errorf("--member-kubeconfig %s: %w", name, err)
		}
		out[name] = cfg
	}
	return out, nil
}

func printReport(cmd *cobra.Command, r *migrate.Report) {
	out := cmd.OutOrStdout()
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ACTION\tKIND\tNAME\tREASON")
	for _, it := range r.Items {
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + "/" + it.Name
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", it.Action, it.Kind, name, it.Reason)
	}
	_ = w.Flush()
	if len(r.Members) > 0 {
		fmt.Fprintln(out)
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "MEMBER OBJECT\tCLUSTER\tFATE\tREASON")
		for _, mo := range r.Members {
			fmt.Fprintf(w, "%s %s/%s\t%s\t%s\t%s\n", mo.Kind, mo.Namespace, mo.Name, mo.Cluster, mo.Fate, mo.Reason)
		}
		_ = w.Flush()
	}
	for _, c := range r.PullCommands {
		fmt.Fprintln(out, c)
	}
	verb := "Migrated"
	if r.DryRun {
		verb = "Dry run: would migrate"
	}
	fmt.Fprintf(out, "%s: %d created, %d unchanged, %d differing (left as they are), %d skipped, %d joined, %d to register (Pull), in %s.\n",
		verb, r.Count(migrate.Create), r.Count(migrate.Unchanged), r.Count(migrate.Differs), r.Count(migrate.Skip),
		r.Count(migrate.Join), r.Count(migrate.Register), r.Finished.Sub(r.Started).Round(time.Millisecond))
}

func writeReport(path string, r *migrate.Report) error {
	raw, err := yaml.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}
