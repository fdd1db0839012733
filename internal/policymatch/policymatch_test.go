package policymatch

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func tmpl() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("default")
	u.SetName("web")
	u.SetLabels(map[string]string{"app": "web"})
	return u
}

type sel int

const (
	byKind sel = iota
	byLabel
	byName
)

func pol(ns, name string, prio int32, s sel, preempt bool) *Policy {
	rs := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}
	switch s {
	case byLabel:
		rs.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	case byName:
		rs.Name = "web"
	}
	spec := &policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{rs}, Priority: ptr.To(prio)}
	if preempt {
		spec.Preemption = policyv1alpha1.PreemptAlways
	}
	return &Policy{Namespace: ns, Name: name, PermanentID: "id-" + ns + "-" + name, Spec: spec}
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name      string
		claim     Claim
		policies  []*Policy
		want      string
		preempted bool
	}{
		{"none", Claim{}, nil, "", false},
		{"other namespace PP ignored", Claim{}, []*Policy{pol("other", "a", 0, byKind, false)}, "", false},
		{"PP beats CPP even with lower priority", Claim{}, []*Policy{pol("", "c", 100, byName, false), pol("default", "p", 0, byKind, false)}, "p", false},
		{"priority beats precision", Claim{}, []*Policy{pol("default", "a", 0, byName, false), pol("default", "b", 1, byKind, false)}, "b", false},
		{"precision: name beats label beats kind", Claim{}, []*Policy{pol("default", "k", 0, byKind, false), pol("default", "l", 0, byLabel, false), pol("default", "n", 0, byName, false)}, "n", false},
		{"name order breaks ties", Claim{}, []*Policy{pol("default", "z", 0, byKind, false), pol("default", "a", 0, byKind, false)}, "a", false},
		{"claimed stays without preemption", Claim{Namespace: "default", Name: "low"}, []*Policy{pol("default", "low", 0, byKind, false), pol("default", "high", 5, byName, false)}, "low", false},
		{"preemption by higher priority", Claim{Namespace: "default", Name: "low"}, []*Policy{pol("default", "low", 0, byKind, false), pol("default", "high", 5, byName, true)}, "high", true},
		{"no preemption at equal priority", Claim{Namespace: "default", Name: "a"}, []*Policy{pol("default", "a", 0, byKind, false), pol("default", "b", 0, byName, true)}, "a", false},
		{"PP preempts CPP", Claim{Cluster: true, Name: "c"}, []*Policy{pol("", "c", 10, byName, false), pol("default", "p", 0, byName, true)}, "p", true},
		{"claim of a policy that no longer matches", Claim{Namespace: "default", Name: "gone"}, []*Policy{pol("default", "b", 0, byKind, false)}, "b", false},
		{"claim by permanent id alone stays", Claim{PermanentID: "id-default-low"}, []*Policy{pol("default", "low", 0, byKind, false), pol("default", "high", 5, byName, false)}, "low", false},
		{"a PP's id is no CPP's claim", Claim{Cluster: true, PermanentID: "id-default-low"}, []*Policy{pol("default", "low", 0, byKind, false), pol("default", "high", 5, byName, false)}, "high", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Choose(tmpl(), tt.claim, tt.policies)
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got.Policy != nil {
				name = got.Policy.Name
			}
			if name != tt.want || got.Preempted != tt.preempted {
				t.Errorf("Choose() = %q (preempted %v), want %q (preempted %v)", name, got.Preempted, tt.want, tt.preempted)
			}
		})
	}
}

func TestChooseSkipsDeletingAndReportsInvalid(t *testing.T) {
	bad := pol("default", "bad", 9, byKind, false)
	bad.Spec.ResourceSelectors[0].LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Nope"}}}
	del := pol("default", "del", 9, byName, false)
	del.Deleting = true
	got, err := Choose(tmpl(), Claim{}, []*Policy{bad, del, pol("default", "ok", 0, byKind, false)})
	if err == nil {
		t.Error("want an error naming the invalid policy")
	}
	if got.Policy == nil || got.Policy.Name != "ok" {
		t.Errorf("Choose() = %+v, want ok", got.Policy)
	}
}
