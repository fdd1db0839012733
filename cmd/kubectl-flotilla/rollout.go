package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rolloutsv1alpha1 "github.com/flotilla-io/flotilla/api/rollouts/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/internal/fleetview"
)

func newRolloutCommand(host *hostFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "See and steer the progressive rollout of a template (rollouts.flotilla.io)",
		Long: `A RolloutPolicy or ClusterRolloutPolicy rolls each new revision of the templates it selects out
stage by stage. Flotilla keeps one Rollout per template (named like its ResourceBinding); these
commands read its status and write its spec, never the template.`,
	}
	cmd.AddCommand(
		rolloutSub(host, "status", "Show the revisions, the stages and each cluster's revision", runRolloutStatus),
		rolloutSub(host, "approve", "Let the approval gate the rollout waits at pass, for the current revision", runRolloutApprove),
		rolloutSub(host, "pause", "Open no further stage or cluster (clusters already started go on)", runRolloutPause(true)),
		rolloutSub(host, "resume", "Undo a pause", runRolloutPause(false)),
		rolloutSub(host, "undo", "Roll the current revision back: every cluster returns to the stable revision", runRolloutUndo),
	)
	return cmd
}

type rolloutOptions struct {
	output string
	watch  bool
	stage  string
}

type rolloutRun func(ctx context.Context, out io.Writer, c client.Client, key client.ObjectKey, o rolloutOptions) error

func rolloutSub(host *hostFlags, use, short string, run rolloutRun) *cobra.Command {
	ns := &namespaceFlags{host: host}
	o := rolloutOptions{}
	cmd := &cobra.Command{
		Use:     use + " KIND/NAME",
		Short:   short,
		Example: fmt.Sprintf("  kubectl flotilla rollout %s deploy/web -n shop", use),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			kind, name, ok := strings.Cut(args[0], "/")
			if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
				return fmt.Errorf("%q: expected KIND/NAME, such as deployment/web", args[0])
			}
			mapping, err := h.Resolve(kind)
			if err != nil {
				return err
			}
			if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
				return fmt.Errorf("%s is cluster-scoped: only namespaced templates roll out progressively", mapping.GroupVersionKind.Kind)
			}
			c, err := client.New(cfg, client.Options{Scheme: flotillascheme.New()})
			if err != nil {
				return err
			}
			key := client.ObjectKey{Namespace: namespace, Name: detector.BindingName(mapping.GroupVersionKind.Kind, name)}
			return run(cmd.Context(), cmd.OutOrStdout(), c, key, o)
		},
	}
	ns.add(cmd, false)
	switch use {
	case "status":
		cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format: yaml or json (default: a table)")
		cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "Print the status again whenever it changes")
	case "approve":
		cmd.Flags().StringVar(&o.stage, "stage", "", "The stage to approve (default: the one the rollout waits at)")
	}
	return cmd
}

func getRollout(ctx context.Context, c client.Client, key client.ObjectKey) (*rolloutsv1alpha1.Rollout, error) {
	ro := &rolloutsv1alpha1.Rollout{}
	if err := c.Get(ctx, key, ro); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no rollout %s/%s: no RolloutPolicy or ClusterRolloutPolicy selects the template", key.Namespace, key.Name)
		}
		return nil, err
	}
	return ro, nil
}

// rolloutWatchInterval is how often status --watch looks again.
const rolloutWatchInterval = time.Second

func runRolloutStatus(ctx context.Context, out io.Writer, c client.Client, key client.ObjectKey, o rolloutOptions) error {
	last := ""
	for {
		ro, err := getRollout(ctx, c, key)
		if err != nil {
			return err
		}
		text, err := renderRollout(ro, o.output, time.Now())
		if err != nil {
			return err
		}
		if text != last {
			if last != "" {
				fmt.Fprintln(out)
			}
			fmt.Fprint(out, text)
			last = text
		}
		if !o.watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(rolloutWatchInterval):
		}
	}
}

func renderRollout(ro *rolloutsv1alpha1.Rollout, output string, now time.Time) (string, error) {
	switch output {
	case "json":
		data, err := json.MarshalIndent(ro, "", "  ")
		return string(data) + "\n", err
	case "yaml":
		data, err := yaml.Marshal(ro)
		return string(data), err
	case "":
	default:
		return "", fmt.Errorf("--output %q: use yaml or json", output)
	}
	st := ro.Status
	var b strings.Builder
	fmt.Fprintf(&b, "Rollout:   %s/%s (%s %s), %s\n", ro.Namespace, ro.Name, st.Resource.Kind, st.Resource.Name, st.Policy)
	fmt.Fprintf(&b, "Phase:     %s\n", st.Phase)
	fmt.Fprintf(&b, "Revision:  %s (stable %s)\n", st.Revision, st.StableRevision)
	if ro.Spec.Paused {
		fmt.Fprintf(&b, "Paused:    yes (kubectl flotilla rollout resume)\n")
	}
	if st.Halt != nil {
		fmt.Fprintf(&b, "Halted:    stage %s, cluster %s: %s (kubectl flotilla rollout undo)\n", st.Halt.Stage, st.Halt.Cluster, st.Halt.Reason)
	}
	if st.MaxUnavailable != nil {
		fmt.Fprintf(&b, "Budget:    %d unavailable replicas at most across the fleet; %d now\n", *st.MaxUnavailable, st.Unavailable)
	}
	if c := meta.FindStatusCondition(st.Conditions, rolloutsv1alpha1.ConditionPolicyConflict); c != nil && c.Status == "True" {
		fmt.Fprintf(&b, "Policies:  %s\n", c.Message)
	}
	if len(st.Stages) > 0 {
		fmt.Fprintln(&b)
		w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "STAGE\tPHASE\tCLUSTERS\tSTARTED\tTOOK")
		for _, s := range st.Stages {
			started, took := "-", "-"
			if s.StartedAt != nil {
				started = duration.HumanDuration(now.Sub(s.StartedAt.Time)) + " ago"
				if s.CompletedAt != nil {
					took = s.CompletedAt.Sub(s.StartedAt.Time).Round(time.Second).String()
				}
			}
			clusters := strings.Join(s.Clusters, ",")
			if clusters == "" {
				clusters = "(none)"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Phase, clusters, started, took)
		}
		_ = w.Flush()
	}
	if len(st.Clusters) > 0 {
		fmt.Fprintln(&b)
		w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "CLUSTER\tSTAGE\tREVISION\tMAY RUN\tPHASE\tHEALTH\tUNAVAILABLE")
		for _, c := range st.Clusters {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c.Name, dash(c.Stage), dash(c.Revision), dash(c.Target), dash(string(c.Phase)), dash(c.Health), c.Unavailable)
		}
		_ = w.Flush()
	}
	return b.String(), nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// updateRollout reads the Rollout, changes its spec and writes it, again on a conflict.
func updateRollout(ctx context.Context, c client.Client, key client.ObjectKey, change func(*rolloutsv1alpha1.Rollout) error) (*rolloutsv1alpha1.Rollout, error) {
	for range 5 {
		ro, err := getRollout(ctx, c, key)
		if err != nil {
			return nil, err
		}
		if err := change(ro); err != nil {
			return nil, err
		}
		err = c.Update(ctx, ro)
		if apierrors.IsConflict(err) {
			continue
		}
		return ro, err
	}
	return nil, errors.New("the Rollout kept changing; try again")
}

func runRolloutApprove(ctx context.Context, out io.Writer, c client.Client, key client.ObjectKey, o rolloutOptions) error {
	var approved rolloutsv1alpha1.Approval
	_, err := updateRollout(ctx, c, key, func(ro *rolloutsv1alpha1.Rollout) error {
		a, err := pendingApproval(ro, o.stage)
		if err != nil {
			return err
		}
		approved = a
		if slices.Contains(ro.Spec.Approvals, a) {
			return nil
		}
		// Approvals of other revisions are of no use any more: only this revision's are kept.
		ro.Spec.Approvals = slices.DeleteFunc(ro.Spec.Approvals, func(x rolloutsv1alpha1.Approval) bool { return x.Revision != a.Revision })
		ro.Spec.Approvals = append(ro.Spec.Approvals, a)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "rollout %s/%s: stage %s approved (%s) for revision %s\n", key.Namespace, key.Name, approved.Stage, strings.ToLower(string(approved.Gate)), approved.Revision)
	return nil
}

// pendingApproval is the approval the rollout waits for: of the named stage, or of the stage
// waiting for approval.
func pendingApproval(ro *rolloutsv1alpha1.Rollout, stage string) (rolloutsv1alpha1.Approval, error) {
	st := ro.Status
	if st.Revision == "" || st.Revision == st.StableRevision {
		return rolloutsv1alpha1.Approval{}, fmt.Errorf("nothing to approve: revision %s is rolled out", dash(st.Revision))
	}
	for _, s := range st.Stages {
		if stage != "" && s.Name != stage || stage == "" && s.Phase != rolloutsv1alpha1.StageWaitingForApproval {
			continue
		}
		gate := rolloutsv1alpha1.ApprovalBefore
		if s.StartedAt != nil {
			gate = rolloutsv1alpha1.ApprovalAfter
		}
		return rolloutsv1alpha1.Approval{Stage: s.Name, Gate: gate, Revision: st.Revision}, nil
	}
	if stage != "" {
		return rolloutsv1alpha1.Approval{}, fmt.Errorf("revision %s has no stage %q", st.Revision, stage)
	}
	return rolloutsv1alpha1.Approval{}, fmt.Errorf("revision %s waits for no approval (phase %s)", st.Revision, st.Phase)
}

func runRolloutPause(pause bool) rolloutRun {
	return func(ctx context.Context, out io.Writer, c client.Client, key client.ObjectKey, _ rolloutOptions) error {
		if _, err := updateRollout(ctx, c, key, func(ro *rolloutsv1alpha1.Rollout) error {
			ro.Spec.Paused = pause
			return nil
		}); err != nil {
			return err
		}
		word := "paused"
		if !pause {
			word = "resumed"
		}
		fmt.Fprintf(out, "rollout %s/%s %s\n", key.Namespace, key.Name, word)
		return nil
	}
}

func runRolloutUndo(ctx context.Context, out io.Writer, c client.Client, key client.ObjectKey, _ rolloutOptions) error {
	ro, err := updateRollout(ctx, c, key, func(ro *rolloutsv1alpha1.Rollout) error {
		st := ro.Status
		if st.Revision == "" || st.Revision == st.StableRevision {
			return fmt.Errorf("nothing to undo: revision %s is rolled out to every cluster; change the template to roll out another", dash(st.Revision))
		}
		ro.Spec.Undo = st.Revision
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "rollout %s/%s: revision %s rolled back to %s\n", key.Namespace, key.Name, ro.Spec.Undo, ro.Status.StableRevision)
	return nil
}
