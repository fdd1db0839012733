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
ClusterRoleBinding with the least rights the control plane needs, and the admission policy
flotilla-NAME-guard, and a token for it (TokenRequest API). In the host it writes the Secret
flotilla-system/NAME (token and caBundle) and the Cluster NAME, whose apiEndpoint is the member
kubeconfig's server: the host must reach it there.

The credential may read and write the kinds templates may be, in every API group the member
serves (discovery) but admission, API aggregation, certificates, the review APIs and API
priority; read nodes and pod logs. A group served later (a propagated CRD) it adds to its own
ClusterRole when a Work needs it (the guard allows nothing else there). It may not: create
tokens (serviceaccounts/token), exec, attach, port-forward or proxy into pods, nodes or
services, add ephemeral containers, impersonate, write in kube-system, kube-public or
kube-node-lease, write ClusterRoleBindings, or create RBAC objects granting rights it does
not hold.

--allow-rbac-escalation adds escalate and bind on Roles and ClusterRoles and ClusterRoleBinding
writes, so that such RBAC objects can be propagated: the credential can then grant itself
anything. --cluster-admin binds cluster-admin without a guard: the escape hatch.

Run it again with the same NAME to rotate the token, and to make the rights anew from the
member's API groups of the moment and the flags given: the control plane reconnects at once.`,
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
			switch {
			case o.ClusterAdmin:
				fmt.Fprintf(out, "The member credential is bound to cluster-admin.\n")
			case o.AllowRBACEscalation:
				fmt.Fprintf(out, "The member credential has the least rights plus escalate and bind (%s).\n", join.AllowRBACEscalationFlag)
			default:
				fmt.Fprintf(out, "The member credential has the least rights (see kubectl flotilla join --help).\n")
			}
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
	f.BoolVar(&o.ClusterAdmin, "cluster-admin", false, "Bind cluster-admin in the member instead of the least rights the control plane needs (no guard)")
	f.BoolVar(&o.AllowRBACEscalation, "allow-rbac-escalation", false,
		"Let the member credential propagate RBAC objects granting rights it does not hold (escalate and bind on Roles and ClusterRoles, ClusterRoleBinding writes)")
	f.DurationVar(&tokenExpiration, "token-expiration", join.DefaultTokenExpiration, "Lifetime of the member token (the member's apiserver may cap it)")
	_ = cmd.MarkFlagRequired("cluster-kubeconfig")
	cmd.MarkFlagsMutuallyExclusive("cluster-admin", "allow-rbac-escalation")
	return cmd
}
