package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/internal/fleetview"
)

type rebalanceOptions struct {
	name    string
	ttl     int32
	wait    bool
	timeout time.Duration
}

func newRebalanceCommand(host *hostFlags) *cobra.Command {
	ns := &namespaceFlags{host: host}
	o := rebalanceOptions{}
	cmd := &cobra.Command{
		Use:   "rebalance KIND/NAME...",
		Short: "Reschedule workloads from scratch, once (a WorkloadRebalancer)",
		Long: `Create a WorkloadRebalancer (apps.karmada.io/v1alpha1) for the workloads: each one's binding is
scheduled again from scratch, as if it were new, ignoring where its replicas are now. Use it to
spread a Divided workload over a member that came back, or to move replicas off a cordoned member.

Namespaced workloads are read in -n (default: the context's namespace). With --wait, the command
waits for the rebalancer to finish, prints the result per workload, and fails when a workload
could not be rebalanced (for instance, no policy propagates it).`,
		Example: `  kubectl flotilla rebalance deployment/web -n shop --wait
  kubectl flotilla rebalance deploy/web statefulset/db clusterrole/reader --ttl 600`,
		Args: cobra.MinimumNArgs(1),
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
			workloads, err := resolveWorkloads(h, namespace, args)
			if err != nil {
				return err
			}
			c, err := client.NewWithWatch(cfg, client.Options{Scheme: flotillascheme.New()})
			if err != nil {
				return err
			}
			return runRebalance(cmd.Context(), cmd.OutOrStdout(), c, workloads, o)
		},
	}
	ns.add(cmd, false)
	cmd.Flags().StringVar(&o.name, "name", "", "Name of the WorkloadRebalancer (default: generated, rebalance-xxxxx)")
	cmd.Flags().Int32Var(&o.ttl, "ttl", -1, "Delete the WorkloadRebalancer this many seconds after it finishes (default: keep it)")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "Wait for the rebalance to finish and print the result per workload")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "How long --wait waits")
	return cmd
}

// resolveWorkloads maps KIND/NAME arguments to workloads, with the namespace for namespaced
// kinds.
func resolveWorkloads(h *fleetview.Host, namespace string, args []string) ([]appsv1alpha1.Workload, error) {
	var out []appsv1alpha1.Workload
	for _, arg := range args {
		kind, name, ok := strings.Cut(arg, "/")
		if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%q: expected KIND/NAME, such as deployment/web", arg)
		}
		mapping, err := h.Resolve(kind)
		if err != nil {
			return nil, err
		}
		w := appsv1alpha1.Workload{APIVersion: mapping.GroupVersionKind.GroupVersion().String(), Kind: mapping.GroupVersionKind.Kind, Name: name}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			w.Namespace = namespace
		}
		out = append(out, w)
	}
	return out, nil
}

func runRebalance(ctx context.Context, out io.Writer, c client.WithWatch, workloads []appsv1alpha1.Workload, o rebalanceOptions) error {
	if o.ttl < -1 {
		return fmt.Errorf("--ttl must be 0 or more seconds, got %d", o.ttl)
	}
	wr := &appsv1alpha1.WorkloadRebalancer{Spec: appsv1alpha1.WorkloadRebalancerSpec{Workloads: workloads}}
	if o.name != "" {
		wr.Name = o.name
	} else {
		wr.GenerateName = "rebalance-"
	}
	if o.ttl >= 0 {
		wr.Spec.TTLSecondsAfterFinished = &o.ttl
	}
	if err := c.Create(ctx, wr); err != nil {
		return err
	}
	fmt.Fprintf(out, "workloadrebalancer.apps.karmada.io/%s created\n", wr.Name)
	if !o.wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	done, err := waitFinished(ctx, c, wr)
	if err != nil {
		return fmt.Errorf("waiting for workloadrebalancer %s: %w", wr.Name, err)
	}
	return printRebalance(out, done)
}

func rebalanceFinished(wr *appsv1alpha1.WorkloadRebalancer) bool {
	return wr.Status.FinishTime != nil && wr.Status.ObservedGeneration == wr.Generation
}

// waitFinished watches the rebalancer until its status reports it finished, and returns it.
// A rebalancer deleted by its TTL reports its last state in the deletion event.
func waitFinished(ctx context.Context, c client.WithWatch, wr *appsv1alpha1.WorkloadRebalancer) (*appsv1alpha1.WorkloadRebalancer, error) {
	rv := wr.ResourceVersion
	for {
		list := &appsv1alpha1.WorkloadRebalancerList{}
		w, err := c.Watch(ctx, list, &client.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", wr.Name),
			Raw:           &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true},
		})
		if err != nil {
			return nil, err
		}
		got, lastRV, err := drain(ctx, w, wr.UID)
		w.Stop()
		if got != nil || err != nil {
			return got, err
		}
		if lastRV != "" {
			rv = lastRV
		}
		// The watch ended (apiserver timeout): read the current state before watching again.
		cur := &appsv1alpha1.WorkloadRebalancer{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(wr), cur); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, errors.New("it was deleted before it finished")
			}
			return nil, err
		}
		if cur.UID != wr.UID {
			return nil, errors.New("it was deleted and created again")
		}
		if rebalanceFinished(cur) {
			return cur, nil
		}
		rv = cur.ResourceVersion
	}
}

// drain reads watch events until the rebalancer finishes (returned), is deleted unfinished
// (an error), the watch ends (nil, nil) or ctx ends.
func drain(ctx context.Context, w watch.Interface, uid types.UID) (*appsv1alpha1.WorkloadRebalancer, string, error) {
	lastRV := ""
	for {
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, lastRV, nil
			}
			if ev.Type == watch.Error {
				return nil, "", apierrors.FromObject(ev.Object)
			}
			cur, ok := ev.Object.(*appsv1alpha1.WorkloadRebalancer)
			if !ok {
				continue
			}
			lastRV = cur.ResourceVersion
			if ev.Type == watch.Bookmark || cur.UID != uid {
				continue
			}
			if rebalanceFinished(cur) {
				return cur, "", nil
			}
			if ev.Type == watch.Deleted {
				return nil, "", errors.New("it was deleted before it finished")
			}
		}
	}
}

// printRebalance prints the result per workload and fails when one Failed.
func printRebalance(out io.Writer, wr *appsv1alpha1.WorkloadRebalancer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tNAMESPACE\tRESULT\tREASON")
	failed := 0
	for _, o := range wr.Status.ObservedWorkloads {
		w := o.Workload
		ns := w.Namespace
		if ns == "" {
			ns = "<none>"
		}
		reason := string(o.Reason)
		if reason == "" {
			reason = "-"
		}
		if o.Result == appsv1alpha1.RebalanceFailed {
			failed++
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\n", strings.ToLower(w.Kind), w.Name, ns, o.Result, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d workload(s) could not be rebalanced", failed, len(wr.Status.ObservedWorkloads))
	}
	return nil
}
