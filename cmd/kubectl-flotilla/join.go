package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/join"
)

func newJoinCommand(host *hostFlags) *cobra.Command {
	var (
		o                join.Options
		memberKubeconfig string
		memberContext    string
		tokenExpiration  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "join NAME --cluster-kubeconfig FILE",
		Short: "Join a member cluster to the host in Push mode, or rotate its token",
		Long: `Join a member cluster to the host in Push mode.

In the member it creates the ServiceAccount flotilla-system/flotilla-NAME, a ClusterRole and
ClusterRoleBinding with the rights the control plane needs (every resource, no escalate, bind
or impersonate; --cluster-admin binds cluster-admin instead) and a token for it (TokenRequest
API). In the host it writes the Secret flotilla-system/NAME (token and caBundle) and the
Cluster NAME, whose apiEndpoint is the member kubeconfig's server: the host must reach it there.

Run it again with the same NAME to rotate the token: the control plane reconnects at once.`,
		Example: `  kubectl flotilla join member1 --cluster-kubeconfig member1.kubeconfig --provider aws --region us-east-1 --zone us-east-1a`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name, o.TokenExpiration = args[0], tokenExpiration
			var err error
			if o.Host, err = host.config(); err != nil {
				return err
			}
			if o.Member, err = join.LoadKubeconfig(memberKubeconfig, memberContext); err != nil {
				return err
			}
			res, err := join.Join(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if res.Rejoined {
				fmt.Fprintf(out, "Cluster %s: token rotated (member id %s, endpoint %s).\n", o.Name, res.MemberID, res.Cluster.Spec.APIEndpoint)
			} else {
				fmt.Fprintf(out, "Cluster %s joined (member id %s, endpoint %s).\n", o.Name, res.MemberID, res.Cluster.Spec.APIEndpoint)
			}
			fmt.Fprintf(out, "The token expires %s; run this command again to rotate it.\n", res.TokenExpires.UTC().Format(time.RFC3339))
			fmt.Fprintf(out, "Watch it become ready: kubectl get cluster %s -w\n", o.Name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&memberKubeconfig, "cluster-kubeconfig", "", "Kubeconfig of the member cluster, with cluster-admin rights (required)")
	f.StringVar(&memberContext, "cluster-context", "", "Context of the member kubeconfig to use (default: its current context)")
	f.StringVar(&o.Provider, "provider", "", "Cloud provider of the member (spec.provider)")
	f.StringVar(&o.Region, "region", "", "Region of the member (spec.region)")
	f.StringVar(&o.Zone, "zone", "", "Zone of the member (spec.zones)")
	f.BoolVar(&o.ClusterAdmin, "cluster-admin", false, "Bind cluster-admin in the member instead of the least rights the control plane needs")
	f.DurationVar(&tokenExpiration, "token-expiration", join.DefaultTokenExpiration, "Lifetime of the member token (the member's apiserver may cap it)")
	_ = cmd.MarkFlagRequired("cluster-kubeconfig")
	return cmd
}
