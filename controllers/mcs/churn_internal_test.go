package mcs

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/testing/churn"
)

// BenchmarkChurn runs services through what the controller keeps of them: a plan, then a
// write into each of three consuming members, then the service goes (its plan is dropped, as
// the reconcile that finds no export does) and each member's derived objects are deleted.
// Every tenth cycle a member leaves, with its namespaces. entries-left must be 0 and the heap
// flat.
//
//	go test -run '^$' -bench Churn -benchtime 3x ./controllers/mcs/
func BenchmarkChurn(b *testing.B) {
	r := &Reconciler{}
	members := []string{"member1", "member2", "member3"}
	entries := func() int { return r.plans.Len() + r.results.Len() + r.crds.Len() + r.namespaces.Len() }
	churn.Run(b, func(i int) {
		key := types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%100), Name: fmt.Sprintf("svc-%d", i)}
		plan := &mcs.Plan{Namespace: key.Namespace, Name: key.Name, Providers: members[:1], Consumers: members,
			Spec: mcsv1alpha1.ServiceImportSpec{Ports: []mcsv1alpha1.ServicePort{{Port: 80}}}}
		r.plans.Store(key, plan)
		for _, m := range members {
			r.record(key, m, nil, plan.Serves(m))
		}
		r.plans.Delete(key)
		for _, m := range members {
			r.record(key, m, nil, false)
		}
		if i%10 == 0 {
			leaving := fmt.Sprintf("leaving-%d", i)
			r.crds.Store(leaving, struct{}{})
			r.namespaces.Store(memberNamespace{cluster: leaving, namespace: key.Namespace}, struct{}{})
			r.record(key, leaving, fmt.Errorf("member down"), false)
			r.forgetMember(leaving)
		}
	}, entries)
}
