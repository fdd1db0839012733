package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/controllers/agent"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/register"
)

func newTokenCommand(host *hostFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Bootstrap tokens for registering Pull member clusters"}
	var ttl time.Duration
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a short-lived bootstrap token that registers the Pull member cluster NAME once, and print the register command to run in the member",
		Long: `Create a bootstrap token in the host (--kubeconfig, an administrator's) for the Pull member
cluster NAME.

The token belongs to a ServiceAccount made for it, flotilla-system/flotilla-bootstrap-NAME-XXXXXX.
Its only right is to create the Cluster NAME, in Pull mode, naming the token, with no labels,
taints, provider, region or zones (an admission policy checks it: you set those once the
cluster is registered), and, once the Flotilla manager has made that Cluster's agent identity,
to fetch the agent's credential. Once the agent reports, the manager deletes the token: it
registers one cluster, once. It expires after --ttl.

When the Cluster NAME exists, the token re-registers it: a Pull agent that was offline past
its credential's expiry (7 days by default) cannot reach the host any more, and the register
command this prints, run again in that member, gives it a new credential, leaving the Cluster,
its Works and its workloads as they are.`,
		Example: `  kubectl flotilla token create edge-1 --ttl 30m`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := host.config()
			if err != nil {
				return err
			}
			t, err := register.CreateToken(cmd.Context(), cfg, args[0], ttl)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Bootstrap token %s for cluster %s, valid until %s.\n", t.ID, t.Cluster, t.Expires.UTC().Format(time.RFC3339))
			if t.Reregisters {
				fmt.Fprintf(out, "Cluster %s exists: the token gives its agent a new host credential, and leaves the Cluster and its workloads as they are.\n", t.Cluster)
				if t.AgentReporting {
					fmt.Fprintf(out, "Its agent reports now (Ready=True), so the token is consumed at once: it is for an agent the host rejects (offline past its credential's expiry).\n")
				}
			}
			fmt.Fprintf(out, "Run this with a kubeconfig of the member cluster (cluster-admin):\n\n  %s\n\n", t.Command())
			if !t.Reregisters {
				fmt.Fprintf(out, "Once it is registered, label and place it here, for example:\n  kubectl label cluster %s env=prod\n"+
					"  kubectl patch cluster %s --type merge -p '{\"spec\":{\"provider\":\"aws\",\"region\":\"eu-west-1\",\"zones\":[\"eu-west-1a\"]}}'\n", t.Cluster, t.Cluster)
			}
			fmt.Fprintf(out, "Delete the token early with: kubectl flotilla token delete %s\n", t.ID)
			return nil
		},
	}
	create.Flags().DurationVar(&ttl, "ttl", register.DefaultTokenTTL, "How long the token is valid (at least 10m)")
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a bootstrap token",
		Example: `  # ID is the one token create printed: the Cluster's name and 6 random characters
  kubectl flotilla token delete edge-1-x7k2pq`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := host.config()
			if err != nil {
				return err
			}
			if err := register.DeleteToken(cmd.Context(), cfg, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Bootstrap token %s deleted.\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, del)
	return cmd
}

func newRegisterCommand(member *hostFlags) *cobra.Command {
	var (
		o       register.Options
		caData  string
		caFile  string
		refresh bool
	)
	cmd := &cobra.Command{
		Use:   "register NAME (--host URL --token TOKEN [--ca-data BASE64] | --refresh-rights)",
		Short: "Register the member cluster of --kubeconfig with the host in Pull mode and install its agent; run again to give its agent a new credential",
		Long: `Register a member cluster in Pull mode: run it with a kubeconfig of the member (--kubeconfig),
with the command ` + "`kubectl flotilla token create NAME`" + ` printed in the host.

In the host it creates the Cluster NAME (syncMode Pull) with the bootstrap token and exchanges
the token for the agent's credential, which reaches only the execution namespace karmada-es-NAME
and the Cluster's own status. In the member it creates the ServiceAccount
flotilla-system/flotilla-agent with the same least rights a Push join gives the control plane,
the Secret flotilla-system/flotilla-agent-host with the credential, and the agent's Deployment
(--no-deployment leaves running the agent to you: bin/agent --kubeconfig ...). The host never
connects to the member. The token sets no labels, taints, provider, region or zones: a host
administrator sets them once the cluster is registered.

When the Cluster NAME exists (its agent was offline past its credential's expiry and the host
rejects it), run it again with a new token from ` + "`kubectl flotilla token create NAME`" + `: it gives the
agent a new credential, and the Cluster, its Works and its workloads stay as they are.

The agent's rights in the member are made from the API groups the member serves now, with the
admission policy flotilla-agent-guard (see kubectl flotilla join --help for what they allow).
The agent adds a group served later to its own ClusterRole when a Work needs it.
--refresh-rights makes the rights anew, without the host: to change --allow-rbac-escalation
(which lets the agent propagate RBAC objects granting rights it does not hold), or when the
agent could not add a group itself.`,
		Example: `  kubectl flotilla register edge-1 --host https://host.example.com:6443 --token eyJ... --ca-data LS0t...`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if !refresh && (o.Host == "" || o.Token == "") {
				return fmt.Errorf("register needs --host and --token (from `kubectl flotilla token create` in the host), or --refresh-rights")
			}
			var err error
			if o.Member, err = member.config(); err != nil {
				return err
			}
			if refresh {
				if err := register.RefreshAccess(cmd.Context(), o.Member, o.Name, o.AllowRBACEscalation); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "The rights of the agent of %s are made anew from the member's API groups.\n", o.Name)
				return nil
			}
			switch {
			case caData != "":
				if o.CA, err = base64.StdEncoding.DecodeString(caData); err != nil {
					return fmt.Errorf("--ca-data is not base64: %w", err)
				}
			case caFile != "":
				if o.CA, err = os.ReadFile(caFile); err != nil {
					return err
				}
			}
			res, err := register.Register(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if res.Reregistered {
				fmt.Fprintf(out, "Cluster %s re-registered (member id %s): the agent has a new host credential, which expires %s; the agent rotates it.\n",
					res.Cluster, res.MemberID, res.TokenExpires.UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(out, "Cluster %s registered in Pull mode (member id %s). The agent's credential expires %s; the agent rotates it.\n",
					res.Cluster, res.MemberID, res.TokenExpires.UTC().Format(time.RFC3339))
				fmt.Fprintf(out, "A host administrator labels it and sets its provider, region and zones (kubectl label cluster %s ...; kubectl patch cluster %s ...).\n", res.Cluster, res.Cluster)
			}
			if o.NoDeployment {
				fmt.Fprintf(out, "Run the agent with a kubeconfig of the member's ServiceAccount flotilla-system/flotilla-agent: agent --kubeconfig FILE\n")
			}
			fmt.Fprintf(out, "Watch it become ready in the host: kubectl get cluster %s -w\n", res.Cluster)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Host, "host", "", "URL of the host apiserver (required unless --refresh-rights)")
	f.StringVar(&o.Token, "token", "", "Bootstrap token from `kubectl flotilla token create` (required unless --refresh-rights)")
	f.StringVar(&caData, "ca-data", "", "Base64 CA bundle of the host apiserver")
	f.StringVar(&caFile, "ca-file", "", "File with the CA bundle of the host apiserver")
	f.StringVar(&o.Image, "image", "", "Image of the agent (default "+register.DefaultImage+"; when re-registering, the Deployment's image is kept unless set)")
	f.BoolVar(&o.NoDeployment, "no-deployment", false, "Do not install the agent's Deployment: run the agent yourself")
	f.DurationVar(&o.TokenExpiration, "token-expiration", agent.DefaultTokenExpiration, "Lifetime of the agent's first credential")
	f.DurationVar(&o.Timeout, "timeout", register.DefaultTimeout, "How long to wait for the host")
	f.BoolVar(&o.AllowRBACEscalation, "allow-rbac-escalation", false,
		"Let the agent propagate RBAC objects granting rights it does not hold (escalate and bind on Roles and ClusterRoles, ClusterRoleBinding writes)")
	f.BoolVar(&refresh, "refresh-rights", false, "Only make the agent's rights in the member anew (API groups served since, --allow-rbac-escalation); needs no host")
	return cmd
}

func newUnregisterCommand(member *hostFlags) *cobra.Command {
	var (
		o                           register.UnregisterOptions
		hostKubeconfig, hostContext string
	)
	cmd := &cobra.Command{
		Use:   "unregister NAME [--host-kubeconfig FILE]",
		Short: "Remove a Pull member cluster: its Cluster in the host, then its agent in the member (--kubeconfig)",
		Long: `Unregister a Pull member cluster; run it with a kubeconfig of the member (--kubeconfig).

With --host-kubeconfig it deletes the Cluster in the host and waits for it to go (the agent,
still running, removes what was propagated to the member). Without it, the Cluster must be gone
already. Then it removes everything register made in the member.`,
		Example: `  # with the member's kubeconfig; the host's deletes the Cluster first
  kubectl flotilla unregister edge-1 --kubeconfig edge-1.kubeconfig --host-kubeconfig host.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			var err error
			if o.Member, err = member.config(); err != nil {
				return err
			}
			if hostKubeconfig != "" {
				if o.Host, err = join.LoadKubeconfig(hostKubeconfig, hostContext); err != nil {
					return err
				}
			}
			removed, err := register.Unregister(cmd.Context(), o)
			for _, r := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", r)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Cluster %s unregistered.\n", o.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&hostKubeconfig, "host-kubeconfig", "", "Kubeconfig of the host, to delete the Cluster there")
	cmd.Flags().StringVar(&hostContext, "host-context", "", "Context of the host kubeconfig")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", register.DefaultTimeout, "How long to wait for the Cluster to go")
	return cmd
}
