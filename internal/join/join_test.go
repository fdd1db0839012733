package join

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

func TestValidateName(t *testing.T) {
	for _, name := range []string{"member1", "a", strings.Repeat("a", MaxNameLength)} {
		if err := ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "Member1", "member_1", "-m", strings.Repeat("a", MaxNameLength+1)} {
		if err := ValidateName(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", name, err)
		}
	}
}

func TestCheckJoinable(t *testing.T) {
	cluster := func(name, id string) clusterv1alpha1.Cluster {
		return clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{ID: id}}
	}
	deleting := cluster("m1", "id-1")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	fleet := []clusterv1alpha1.Cluster{cluster("m1", "id-1"), cluster("m2", "id-2"), cluster("by-hand", "")}

	tests := []struct {
		name, join, id string
		clusters       []clusterv1alpha1.Cluster
		wantErr        error
		wantExisting   string
		wantMessage    string
	}{
		{name: "a new member", clusters: fleet, join: "m3", id: "id-3"},
		{name: "re-join rotates", clusters: fleet, join: "m1", id: "id-1", wantExisting: "m1"},
		{name: "a Cluster made by hand without id is taken over", clusters: fleet, join: "by-hand", id: "id-9", wantExisting: "by-hand"},
		{name: "same member, second name", clusters: fleet, join: "m1-again", id: "id-1", wantErr: ErrAlreadyJoined, wantMessage: `already joined as Cluster "m1"`},
		{name: "name of another member", clusters: fleet, join: "m2", id: "id-1", wantErr: ErrNameTaken, wantMessage: "choose another name"},
		{name: "name being deleted", clusters: []clusterv1alpha1.Cluster{deleting}, join: "m1", id: "id-1", wantErr: ErrNameTaken, wantMessage: "being deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing, err := CheckJoinable(tt.clusters, tt.join, tt.id)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMessage) {
				t.Errorf("message %q does not say %q", err, tt.wantMessage)
			}
			got := ""
			if existing != nil {
				got = existing.Name
			}
			if got != tt.wantExisting {
				t.Errorf("existing = %q, want %q", got, tt.wantExisting)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	s := side{role: "member", endpoint: "https://127.0.0.1:6443", flag: "--cluster-kubeconfig"}
	tests := []struct {
		name    string
		err     error
		want    error
		message string
	}{
		{"refused", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443", Err: syscall.ECONNREFUSED}, ErrUnreachable, "cannot reach the member apiserver"},
		{"unknown CA", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443", Err: x509.UnknownAuthorityError{}}, ErrUnreachable, "certificate-authority-data"},
		{"401", apierrors.NewUnauthorized("Unauthorized"), ErrUnauthorized, "wrong or has expired"},
		{"403", apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "kube-system", errors.New("RBAC")), ErrForbidden, "needs cluster-admin in the member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.explain(fmt.Errorf("wrapped: %w", tt.err), "read the kube-system namespace")
			if !errors.Is(got, tt.want) || !strings.Contains(got.Error(), tt.message) {
				t.Errorf("got %v; want %v saying %q", got, tt.want, tt.message)
			}
		})
	}
	other := apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "m1", errors.New("changed"))
	if got := s.explain(other, "write Secret"); !apierrors.IsConflict(got) || errors.Is(got, ErrUnreachable) {
		t.Errorf("an ordinary API error should pass through wrapped, got %v", got)
	}
}

func TestMemberRulesAreLeast(t *testing.T) {
	for _, r := range MemberRules() {
		for _, v := range r.Verbs {
			if slices.Contains([]string{"escalate", "bind", "impersonate", "deletecollection", rbacv1.VerbAll}, v) {
				t.Errorf("rule %+v grants %q", r, v)
			}
		}
	}
}

func TestPrintClusters(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ready := clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push},
		Status: clusterv1alpha1.ClusterStatus{
			KubernetesVersion: "v1.36.3",
			Conditions:        []metav1.Condition{{Type: wellknown.ClusterConditionReady, Status: metav1.ConditionTrue}},
			NodeSummary:       &clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 2},
			ResourceSummary: &clusterv1alpha1.ResourceSummary{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("24"), corev1.ResourceMemory: resource.MustParse("96Gi")},
				Allocated:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1750m"), corev1.ResourceMemory: resource.MustParse("1536Mi")},
			},
		},
	}
	fresh := clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "a-new-one", CreationTimestamp: metav1.NewTime(now.Add(-20 * time.Second))},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push},
	}
	var out bytes.Buffer
	if err := PrintClusters(&out, []clusterv1alpha1.Cluster{ready, fresh}, now); err != nil {
		t.Fatal(err)
	}
	want := `NAME        VERSION   MODE   READY     NODES   CPU(alloc/total)   MEMORY(alloc/total)   AGE
a-new-one   -         Push   Unknown   -       -                  -                     20s
member1     v1.36.3   Push   True      2/3     1.7/24             1.5Gi/96Gi            3h
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}
