package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/dashboard"
)

func newDashboardCommand(host *hostFlags) *cobra.Command {
	var port int
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a read-only web view of the fleet on 127.0.0.1, updated live",
		Long: `Serve a read-only page on 127.0.0.1 that shows the member clusters (health, mode, version,
nodes, CPU and memory, taints) and each template's placement with its per-cluster readiness
(from the ResourceBindings' and ClusterResourceBindings' status). The page updates live: the
command watches those kinds with your kubeconfig and pushes changes to the browser (Server-Sent
Events). Nothing is installed in the host and no permission is needed beyond listing and
watching Clusters and bindings. Ctrl-C stops it.`,
		Example: `  kubectl flotilla dashboard
  kubectl flotilla dashboard --port 8001`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if port < 0 || port > 65535 {
				return fmt.Errorf("invalid --port %d: use 0 (any free port) to 65535", port)
			}
			cfg, err := host.config()
			if err != nil {
				return err
			}
			s, err := dashboard.New(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return s.Serve(cmd.Context(), port, func(url string) {
				fmt.Fprintf(cmd.OutOrStdout(), "Serving the fleet's dashboard at %s (read-only, host %s). Ctrl-C stops it.\n", url, cfg.Host)
			})
		},
	}
	cmd.Flags().IntVar(&port, "port", 0, "Port on 127.0.0.1 (default: one the OS chooses)")
	return cmd
}
