// Command kubectl-flotilla is a kubectl plugin for Flotilla's member clusters and the
// templates propagated to them:
//
//	kubectl flotilla join NAME --cluster-kubeconfig FILE [--cluster-context CTX] [--provider P --region R --zone Z] [--allow-rbac-escalation | --cluster-admin]
//	kubectl flotilla unjoin NAME [--cluster-kubeconfig FILE]
//	kubectl flotilla get clusters [NAME...] [-o wide|json|yaml]
//	kubectl flotilla get KIND [NAME] [-n NS | -A] [-l SELECTOR] [--clusters a,b] [--member-timeout 5s] [-o wide|json|yaml]
//	kubectl flotilla status KIND/NAME [-n NS] [--watch] [-o wide|json|yaml]
//	kubectl flotilla describe cluster NAME
//	kubectl flotilla describe KIND/NAME [-n NS] [-l SELECTOR] [--clusters a,b] [--member-timeout 5s]
//	kubectl flotilla logs (KIND/NAME | -l SELECTOR) [-n NS] [-c CONTAINER] [--tail N] [--clusters a,b]
//	kubectl flotilla events [KIND/NAME] [-n NS | -A] [-l SELECTOR] [--clusters a,b] [-o wide|json|yaml]
//	kubectl flotilla dashboard [--port N]
//	kubectl flotilla cordon|uncordon CLUSTER
//	kubectl flotilla taint CLUSTER KEY[=VALUE]:EFFECT... [KEY[:EFFECT]-]... [--overwrite]
//	kubectl flotilla rebalance KIND/NAME... [-n NS] [--wait] [--ttl SECONDS]
//	kubectl flotilla token create NAME [--ttl 1h] | token delete ID
//	kubectl flotilla register NAME --host URL --token TOKEN [--ca-data BASE64] [--no-deployment] [--allow-rbac-escalation]   (kubeconfig: the member's)
//	kubectl flotilla register NAME --refresh-rights [--allow-rbac-escalation]                                              (kubeconfig: the member's)
//	kubectl flotilla unregister NAME [--host-kubeconfig FILE]                                     (kubeconfig: the member's)
//	kubectl flotilla migrate --from-kubeconfig KARMADA --namespaces NS,... [--member-kubeconfig NAME=FILE]... [--dry-run]
//	kubectl flotilla promote KIND/NAME --cluster CLUSTER [-n NS] [--dependencies] [--opt-in] [--dry-run]
//	kubectl flotilla interpret [-f CUSTOMIZATION.yaml] (--check | [--operation OP] [--desired-file F] [--observed-file F] [--status-file F] [--desired-replica N])
//	kubectl flotilla schedule --dry-run -f POLICY.yaml -f TEMPLATE.yaml [--clusters-file CLUSTERS.yaml] [--scheduler-plugins LIST] [-v]
//	kubectl flotilla completion bash|zsh|fish|powershell
//
// status prints a template's propagation as a tree (template, claiming policy, binding, one
// line per member's Work); get KIND reads the members' objects in parallel through the host's
// member credentials and prints their server-side Tables side by side with a CLUSTER column;
// describe cluster shows a Cluster's status and the bindings placed on it; describe, logs and
// events for a workload read its pods in every member (selected by the template's
// spec.selector), in parallel, with a CLUSTER column or prefix. interpret checks
// ResourceInterpreterCustomizations and runs their Lua scripts on objects from files,
// locally, as karmadactl interpret does. schedule --dry-run explains where the scheduler
// would place a template under a policy (package pkg/scheduler/dryrun).
//
// --kubeconfig and --context choose the host, as for kubectl; -n defaults to the context's
// namespace. Errors exit with status 1. The logic lives in internal/join (join, unjoin, get
// clusters) and internal/fleetview (status, get KIND, describe).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/join"
)

// hostFlags choose the host cluster.
type hostFlags struct {
	kubeconfig, context string
}

func (h *hostFlags) config() (*rest.Config, error) {
	return join.LoadKubeconfig(h.kubeconfig, h.context)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	host := &hostFlags{}
	root := &cobra.Command{
		Use:           "kubectl-flotilla",
		Short:         "Join and inspect Flotilla member clusters and what is propagated to them",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Help shows "kubectl flotilla", the way users type it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl flotilla"},
	}
	root.PersistentFlags().StringVar(&host.kubeconfig, "kubeconfig", "", "Kubeconfig of the host cluster (default: $KUBECONFIG or ~/.kube/config)")
	root.PersistentFlags().StringVar(&host.context, "context", "", "Context of the host kubeconfig to use (default: its current context)")
	root.AddCommand(newJoinCommand(host), newUnjoinCommand(host), newGetCommand(host),
		newStatusCommand(host), newDescribeCommand(host), newLogsCommand(host), newEventsCommand(host),
		newDashboardCommand(host))
	root.AddCommand(newCordonCommand(host), newUncordonCommand(host), newTaintCommand(host), newRebalanceCommand(host))
	root.AddCommand(newTokenCommand(host), newRegisterCommand(host), newUnregisterCommand(host))
	root.AddCommand(newMigrateCommand(host), newPromoteCommand(host))
	root.AddCommand(newInterpretCommand(host), newRolloutCommand(host), newScheduleCommand(host))
	addCompletionExamples(root)
	return root
}

// addCompletionExamples replaces cobra's default completion command with one of the same
// shape whose commands each have an example, like every other command (--help and
// docs/cli.md). Each writes to the command's output when it runs.
func addCompletionExamples(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = true
	completion := &cobra.Command{
		Use:   "completion",
		Short: "Generate the autocompletion script for the specified shell",
		Long: `Generate the autocompletion script of kubectl flotilla for a shell. See each sub-command's
help for how to load it.`,
		Args: cobra.NoArgs,
	}
	for _, sh := range []struct {
		name, example string
		gen           func(cmd *cobra.Command) error
	}{
		{"bash", "  source <(kubectl flotilla completion bash)",
			func(cmd *cobra.Command) error { return cmd.Root().GenBashCompletionV2(cmd.OutOrStdout(), true) }},
		{"zsh", "  kubectl flotilla completion zsh > \"${fpath[1]}/_kubectl-flotilla\"",
			func(cmd *cobra.Command) error { return cmd.Root().GenZshCompletion(cmd.OutOrStdout()) }},
		{"fish", "  kubectl flotilla completion fish > ~/.config/fish/completions/kubectl-flotilla.fish",
			func(cmd *cobra.Command) error { return cmd.Root().GenFishCompletion(cmd.OutOrStdout(), true) }},
		{"powershell", "  kubectl flotilla completion powershell | Out-String | Invoke-Expression",
			func(cmd *cobra.Command) error { return cmd.Root().GenPowerShellCompletionWithDesc(cmd.OutOrStdout()) }},
	} {
		completion.AddCommand(&cobra.Command{
			Use:     sh.name,
			Short:   "Generate the autocompletion script for " + sh.name,
			Example: sh.example,
			Args:    cobra.NoArgs,
			RunE:    func(cmd *cobra.Command, _ []string) error { return sh.gen(cmd) },
		})
	}
	root.AddCommand(completion)
}
