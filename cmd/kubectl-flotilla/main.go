// Command kubectl-flotilla is a kubectl plugin for Flotilla's member clusters:
//
//	kubectl flotilla join NAME --cluster-kubeconfig FILE [--cluster-context CTX] [--provider P --region R --zone Z] [--cluster-admin]
//	kubectl flotilla unjoin NAME [--cluster-kubeconfig FILE]
//	kubectl flotilla get clusters [NAME...]
//
// --kubeconfig and --context choose the host, as for kubectl. The logic lives in
// internal/join.
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
		Short:         "Join, unjoin and list Flotilla member clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Help shows "kubectl flotilla", the way users type it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl flotilla"},
	}
	root.PersistentFlags().StringVar(&host.kubeconfig, "kubeconfig", "", "Kubeconfig of the host cluster (default: $KUBECONFIG or ~/.kube/config)")
	root.PersistentFlags().StringVar(&host.context, "context", "", "Context of the host kubeconfig to use (default: its current context)")
	root.AddCommand(newJoinCommand(host), newUnjoinCommand(host), newGetCommand(host))
	return root
}
