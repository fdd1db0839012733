package clusterstatus

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Collected is what one collection of a member's status found. Fields that could not be
// collected are empty (nil or ""): the caller keeps their last values.
type Collected struct {
	Version        string
	APIEnablements []clusterv1alpha1.APIEnablement
	Nodes          *clusterv1alpha1.NodeSummary
	Resources      *clusterv1alpha1.ResourceSummary
}

// Collect reads a member's version, APIs (group versions whose discovery fails keep their
// entries in previous) and node and resource summaries, listing Nodes and Pods page by page.
// It is the same collection for a Push member, done by the cluster controller over its
// connection, and for a Pull member, done by its agent in the member. The error joins
// whatever could not be collected; what could be is returned with it.
func Collect(ctx context.Context, kube kubernetes.Interface, models []clusterv1alpha1.ResourceModel, previous []clusterv1alpha1.APIEnablement) (Collected, error) {
	var out Collected
	var errs []error
	dc := discovery.ToDiscoveryInterfaceWithContext(kube.Discovery())
	if v, err := dc.ServerVersionWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("get version: %w", err))
	} else {
		out.Version = v.GitVersion
	}
	if enablements, err := discoverAPIs(ctx, dc, previous); err != nil {
		errs = append(errs, err)
	} else {
		out.APIEnablements = enablements
	}
	nodes, resources, err := Summarize(ctx, Listers{
		Nodes: kube.CoreV1().Nodes().List,
		Pods:  kube.CoreV1().Pods(metav1.NamespaceAll).List,
	}, models)
	if err != nil {
		errs = append(errs, err)
	} else {
		out.Nodes, out.Resources = nodes, resources
	}
	return out, errors.Join(errs...)
}

// discoverAPIs discovers the member's resources. Group versions whose discovery failed keep
// their previous entries.
func discoverAPIs(ctx context.Context, dc discovery.DiscoveryInterfaceWithContext, previous []clusterv1alpha1.APIEnablement) ([]clusterv1alpha1.APIEnablement, error) {
	_, lists, err := dc.ServerGroupsAndResourcesWithContext(ctx)
	failed := map[string]bool{}
	var partial *discovery.ErrGroupDiscoveryFailed
	switch {
	case errors.As(err, &partial):
		for gv := range partial.Groups {
			failed[gv.String()] = true
		}
	case err != nil:
		return nil, fmt.Errorf("discover APIs: %w", err)
	}
	return APIEnablements(lists, failed, previous), nil
}
