package frq

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func quota(clusters ...string) *policyv1alpha1.FederatedResourceQuota {
	q := &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q", Generation: 3},
		Spec: policyv1alpha1.FederatedResourceQuotaSpec{Overall: rl("cpu", "10")}}
	for _, c := range clusters {
		q.Spec.StaticAssignments = append(q.Spec.StaticAssignments, policyv1alpha1.StaticClusterAssignment{ClusterName: c, Hard: rl("cpu", "2")})
	}
	return q
}

func TestDesired(t *testing.T) {
	works, err := Desired(quota("m1", "m2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(works) != 2 || works[0].Namespace != "karmada-es-m1" || works[1].Namespace != "karmada-es-m2" {
		t.Fatalf("Works in the wrong namespaces: %v", works)
	}
	if works[0].Name != works[1].Name || works[0].Name == "" {
		t.Errorf("Works named %q and %q, want one name", works[0].Name, works[1].Name)
	}
	rq := &corev1.ResourceQuota{}
	if err := json.Unmarshal(works[0].Spec.Workload.Manifests[0].Raw, rq); err != nil {
		t.Fatal(err)
	}
	if rq.Kind != "ResourceQuota" || rq.Namespace != "ns" || rq.Name != "q" || rq.Spec.Hard.Cpu().String() != "2" {
		t.Errorf("manifest = %+v", rq)
	}
	if rq.Annotations[wellknown.WorkNameAnnotation] != works[0].Name || works[0].Labels[NameLabel] != "q" || works[0].Labels[NamespaceLabel] != "ns" {
		t.Errorf("labels or annotations missing: %v %v", rq.Annotations, works[0].Labels)
	}
}

func work(gen, observed int64, applied metav1.ConditionStatus, msg string, status *corev1.ResourceQuotaStatus) *workv1alpha1.Work {
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
	if applied != "" {
		w.Status.Conditions = []metav1.Condition{{Type: wellknown.WorkConditionApplied, Status: applied, Message: msg, ObservedGeneration: observed}}
	}
	if status != nil {
		raw, _ := json.Marshal(status)
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Identifier: workv1alpha1.ResourceIdentifier{Kind: "ResourceQuota"}, Status: &runtime.RawExtension{Raw: raw}}}
	}
	return w
}

func TestAggregate(t *testing.T) {
	used := func(cpu string) *corev1.ResourceQuotaStatus {
		return &corev1.ResourceQuotaStatus{Hard: rl("cpu", "2"), Used: rl("cpu", cpu)}
	}
	tests := []struct {
		name      string
		q         *policyv1alpha1.FederatedResourceQuota
		works     map[string]*workv1alpha1.Work
		errs      map[string]string
		status    metav1.ConditionStatus
		reason    string
		message   string
		clusters  int
		totalUsed string
	}{{
		name: "no assignments", q: quota(), status: metav1.ConditionTrue, reason: policyv1alpha1.ReasonQuotaApplied,
		message: "No static assignments: overall is enforced when scheduling", totalUsed: "0",
	}, {
		name: "every member reports", q: quota("m1", "m2"),
		works:  map[string]*workv1alpha1.Work{"m1": work(1, 1, metav1.ConditionTrue, "", used("500m")), "m2": work(2, 2, metav1.ConditionTrue, "", used("1"))},
		status: metav1.ConditionTrue, reason: policyv1alpha1.ReasonQuotaApplied, message: "ResourceQuota applied and reported by 2 member(s)",
		clusters: 2, totalUsed: "1500m",
	}, {
		name: "stale, unapplied and missing members are pending", q: quota("m1", "m2", "m3", "m4"),
		works: map[string]*workv1alpha1.Work{"m1": work(2, 1, metav1.ConditionTrue, "", used("1")), "m2": work(1, 0, "", "", nil),
			"m4": work(1, 1, metav1.ConditionTrue, "", nil)},
		status: metav1.ConditionFalse, reason: policyv1alpha1.ReasonQuotaPending,
		message:   "Pending: m1: not applied yet; m2: not applied yet; m3: not written yet; m4: status not collected yet",
		totalUsed: "0",
	}, {
		name: "a failure wins over pending, and reported members still count", q: quota("m1", "m2", "m3"),
		works:  map[string]*workv1alpha1.Work{"m1": work(1, 1, metav1.ConditionTrue, "", used("1")), "m2": work(1, 1, metav1.ConditionFalse, "forbidden by the member", nil)},
		errs:   map[string]string{"m3": "cluster is not joined"},
		status: metav1.ConditionFalse, reason: policyv1alpha1.ReasonQuotaApplyFailed,
		message:  "Failed: m2: forbidden by the member; m3: cluster is not joined",
		clusters: 1, totalUsed: "1",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Aggregate(tt.q, tt.works, tt.errs)
			if rep.Ready.Status != tt.status || rep.Ready.Reason != tt.reason || rep.Ready.Message != tt.message || rep.Ready.ObservedGeneration != 3 {
				t.Errorf("Ready = %s %s %q (generation %d), want %s %s %q", rep.Ready.Status, rep.Ready.Reason, rep.Ready.Message, rep.Ready.ObservedGeneration, tt.status, tt.reason, tt.message)
			}
			if len(rep.Status.AggregatedStatus) != tt.clusters {
				t.Errorf("aggregatedStatus has %d members, want %d", len(rep.Status.AggregatedStatus), tt.clusters)
			}
			if got := rep.Status.OverallUsed.Cpu().String(); got != tt.totalUsed {
				t.Errorf("overallUsed cpu = %s, want %s", got, tt.totalUsed)
			}
			if rep.Status.Overall.Cpu().String() != "10" {
				t.Errorf("overall = %v", rep.Status.Overall)
			}
		})
	}
}
