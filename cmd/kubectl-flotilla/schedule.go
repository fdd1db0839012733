package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
	"github.com/flotilla-io/flotilla/pkg/scheduler/config"
	"github.com/flotilla-io/flotilla/pkg/scheduler/dryrun"
)

type scheduleFlags struct {
	dryRun       bool
	files        []string
	clustersFile string
	plugins      string
	verbose      bool
}

func newScheduleCommand(host *hostFlags) *cobra.Command {
	o := &scheduleFlags{}
	cmd := &cobra.Command{
		Use:   "schedule --dry-run -f POLICY.yaml -f TEMPLATE.yaml [--clusters-file CLUSTERS.yaml] [--scheduler-plugins LIST] [-v]",
		Short: "Show where the scheduler would place a template under a policy, and why",
		Long: `schedule --dry-run runs the scheduler's cycle locally on the template(s) under the
PropagationPolicy or ClusterPropagationPolicy given with -f, and prints per cluster the
filters' verdict (the first rejection), the estimated room in replicas, each score plugin's
score, and the resulting division. -v prints every filter's verdict. The Clusters are read
from the host (--kubeconfig, --context) or from --clusters-file (a Cluster, a List of them,
or several YAML documents) to work offline. Nothing is written.

Placements the manager holds for bindings its members have not reported yet, workload
affinity peers and FederatedResourceQuota usage are not known here.`,
		Example: `  # Where would this Deployment go under this policy, and why?
  kubectl flotilla schedule --dry-run -f policy.yaml -f deployment.yaml

  # The same offline, against saved Clusters, with every filter's verdict
  kubectl get clusters.cluster.karmada.io -o yaml > clusters.yaml
  kubectl flotilla schedule --dry-run -f app.yaml --clusters-file clusters.yaml -v

  # What changes without ClusterLocality
  kubectl flotilla schedule --dry-run -f app.yaml --scheduler-plugins '*,-ClusterLocality'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSchedule(cmd, host, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "Required: only the dry run exists; the manager schedules for real")
	f.StringArrayVarP(&o.files, "filename", "f", nil, "A file with the policy and/or templates (repeatable; - for stdin)")
	f.StringVar(&o.clustersFile, "clusters-file", "", "Read the Clusters from this file instead of the host")
	f.StringVar(&o.plugins, "scheduler-plugins", "", `The manager's --scheduler-plugins, e.g. "*,-ClusterLocality" (default: all)`)
	f.BoolVarP(&o.verbose, "verbose", "v", false, "Print every filter's verdict and score of every cluster")
	return cmd
}

func runSchedule(cmd *cobra.Command, host *hostFlags, o *scheduleFlags) error {
	if !o.dryRun {
		return errors.New("only --dry-run is supported: the manager's scheduler places bindings")
	}
	if len(o.files) == 0 {
		return errors.New("give the policy and the template with -f")
	}
	plugins, err := config.ParseFlag(o.plugins)
	if err != nil {
		return err
	}
	var docs []*unstructured.Unstructured
	for _, path := range o.files {
		data, err := readInput(cmd, path)
		if err != nil {
			return err
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return fmt.Errorf("-f %s: %w", path, err)
		}
		docs = append(docs, objs...)
	}
	placement, templates, err := splitPolicy(docs)
	if err != nil {
		return err
	}
	clusters, err := scheduleClusters(cmd, host, o.clustersFile)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	for i, t := range templates {
		if i > 0 {
			fmt.Fprintln(out)
		}
		spec, err := dryrun.Binding(placement, t)
		if err != nil {
			return err
		}
		report, err := dryrun.Run(dryrun.Options{Plugins: plugins}, spec, clusters)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %s (%d replicas)\n", t.GetKind(), objectName(t), spec.Replicas)
		if o.verbose {
			if err := dryrun.Verbose(out, report); err != nil {
				return err
			}
			fmt.Fprintln(out)
		}
		if err := dryrun.Print(out, report); err != nil {
			return err
		}
	}
	return nil
}

func readInput(cmd *cobra.Command, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	return os.ReadFile(path)
}

func objectName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// decodeObjects reads every object of a file: YAML documents, and the items of Lists.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	docs, err := yamlDocuments(data)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, doc := range docs {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{Object: normalizeNumbers(m).(map[string]any)}
		if obj.IsList() {
			err := obj.EachListItem(func(o runtime.Object) error {
				out = append(out, o.(*unstructured.Unstructured))
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" {
			return nil, errors.New("an object has no apiVersion or kind")
		}
		out = append(out, obj)
	}
	return out, nil
}

// splitPolicy returns the placement of the one policy among the objects, and the others.
func splitPolicy(objs []*unstructured.Unstructured) (*policyv1alpha1.Placement, []*unstructured.Unstructured, error) {
	var placement *policyv1alpha1.Placement
	var templates []*unstructured.Unstructured
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Group != policyv1alpha1.GroupVersion.Group || (gvk.Kind != "PropagationPolicy" && gvk.Kind != "ClusterPropagationPolicy") {
			templates = append(templates, o)
			continue
		}
		if placement != nil {
			return nil, nil, errors.New("more than one policy given: give one PropagationPolicy or ClusterPropagationPolicy")
		}
		var p policyv1alpha1.PropagationPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &p, true); err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		placement = &p.Spec.Placement
	}
	switch {
	case placement == nil:
		return nil, nil, errors.New("no PropagationPolicy or ClusterPropagationPolicy given (-f)")
	case len(templates) == 0:
		return nil, nil, errors.New("no template given (-f): a Deployment, Job, ConfigMap, ...")
	}
	return placement, templates, nil
}

// scheduleClusters reads the Clusters from the file, or from the host.
func scheduleClusters(cmd *cobra.Command, host *hostFlags, path string) ([]*clusterv1alpha1.Cluster, error) {
	if path != "" {
		data, err := readInput(cmd, path)
		if err != nil {
			return nil, err
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("--clusters-file %s: %w", path, err)
		}
		var out []*clusterv1alpha1.Cluster
		for _, o := range objs {
			if o.GetKind() != "Cluster" || o.GroupVersionKind().Group != clusterv1alpha1.GroupVersion.Group {
				return nil, fmt.Errorf("--clusters-file %s: %s %s is not a Cluster (cluster.karmada.io)", path, o.GetKind(), o.GetName())
			}
			c := &clusterv1alpha1.Cluster{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, c, true); err != nil {
				return nil, fmt.Errorf("--clusters-file %s: Cluster %s: %w", path, o.GetName(), err)
			}
			out = append(out, c)
		}
		return out, nil
	}
	cfg, err := host.config()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return nil, err
	}
	list := &clusterv1alpha1.ClusterList{}
	if err := c.List(cmd.Context(), list); err != nil {
		return nil, fmt.Errorf("reading the Clusters from the host: %w", err)
	}
	out := make([]*clusterv1alpha1.Cluster, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
