package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	mcscontroller "github.com/flotilla-io/flotilla/controllers/mcs"
	"github.com/flotilla-io/flotilla/internal/mcs"
)

// serviceDiscovery exports the pipy Service of the weighted-pipy scenario from member1 (a
// ServiceExport template and its policy) and prints the endpoints member3 imports. Both are
// Push members: service discovery reads and writes members through the host's connections,
// which Pull members (member2 here) do not give it.
func (d *demo) serviceDiscovery(ctx context.Context) error {
	step("Export Service pipy from member1 (MCS API); member3 imports its endpoints. (Pull members take no part: see docs/guides/multi-cluster-services.md.)")
	say("kubectl apply --server-side -f <sigs.k8s.io/mcs-api v0.5.2 config/crd>", "the ServiceExport and ServiceImport CRDs, in the host (Flotilla installs them into members)")
	if err := mcscontroller.EnsureCRDs(ctx, d.host); err != nil {
		return err
	}
	say("kubectl create -f <ServiceExport pipy; PropagationPolicy pipy-export to member1>", "")
	if err := d.wait(ctx, "ServiceExport served by the host", func(ctx context.Context) (bool, error) {
		err := d.host.Create(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pipy"}})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	}); err != nil {
		return err
	}
	pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pipy-export"},
		Spec: policyv1alpha1.PropagationSpec{
			// ServiceExport templates are matched at the CRD's preferred version.
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "multicluster.x-k8s.io/v1beta1", Kind: "ServiceExport", Name: "pipy"}},
			Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
		}}
	if err := d.host.Create(ctx, pp); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	var lines []string
	if err := d.wait(ctx, "member3 has derived EndpointSlices of pipy from member1", func(ctx context.Context) (bool, error) {
		list := &discoveryv1.EndpointSliceList{}
		if err := d.members["member3"].List(ctx, list, client.InNamespace("default"),
			client.MatchingLabels{mcs.LabelServiceName: "pipy", mcs.ManagedByLabel: mcs.ManagedByValue}); err != nil {
			return false, nil
		}
		lines = lines[:0]
		sources := map[string]bool{}
		for _, s := range list.Items {
			src := s.Labels[mcs.LabelSourceCluster]
			for _, ep := range s.Endpoints {
				sources[src] = true
				lines = append(lines, fmt.Sprintf("   %-10s %-16s %s", src, strings.Join(ep.Addresses, ","), s.Name))
			}
		}
		return sources["member1"], nil
	}); err != nil {
		return err
	}
	sort.Strings(lines)
	say("kubectl --kubeconfig member3.kubeconfig get endpointslices -l multicluster.kubernetes.io/service-name=pipy",
		"member3 has Service "+mcs.DerivedServiceName("pipy")+" (no selector), ServiceImport pipy and the providers' endpoints, by source cluster")
	fmt.Printf("   %-10s %-16s %s\n%s\n", "SOURCE", "ADDRESS", "ENDPOINTSLICE", strings.Join(lines, "\n"))
	return nil
}
