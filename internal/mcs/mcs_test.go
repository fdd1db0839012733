package mcs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

var t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func svc(ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports}}
}

func port(name string, n int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
}

func slice(name string, ips ...string) discoveryv1.EndpointSlice {
	s := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To("kwok-node-0"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "p-" + ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func TestResolveConflicts(t *testing.T) {
	headless := svc(port("http", 80))
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	external := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "x.example"}}
	tests := []struct {
		name      string
		exports   []Export
		wantPorts []mcsv1alpha1.ServicePort
		wantType  mcsv1alpha1.ServiceImportType
		// cluster → "valid reason/conflict reason"
		want      map[string]string
		providers []string
	}{{
		name: "identical exports",
		exports: []Export{
			{Cluster: "b", Since: at(time.Second), Service: svc(port("http", 80))},
			{Cluster: "a", Since: at(2 * time.Second), Service: svc(port("http", 80))},
		},
		wantPorts: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		wantType:  mcsv1alpha1.ClusterSetIP,
		want:      map[string]string{"a": "Valid/NoConflicts", "b": "Valid/NoConflicts"},
		providers: []string{"a", "b"},
	}, {
		name: "the oldest export's port wins; the newer one is in PortConflict; ports are a union",
		exports: []Export{
			{Cluster: "new", Since: at(time.Minute), Service: svc(port("http", 8080), port("metrics", 9090))},
			{Cluster: "old", Since: at(0), Service: svc(port("http", 80))},
		},
		wantPorts: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}, {Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090}},
		wantType:  mcsv1alpha1.ClusterSetIP,
		want:      map[string]string{"old": "Valid/NoConflicts", "new": "Valid/PortConflict"},
		providers: []string{"new", "old"},
	}, {
		name: "same age: cluster name breaks the tie; type conflict",
		exports: []Export{
			{Cluster: "z", Since: t0, Service: headless},
			{Cluster: "a", Since: t0, Service: svc(port("http", 80))},
		},
		wantPorts: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		wantType:  mcsv1alpha1.ClusterSetIP,
		want:      map[string]string{"a": "Valid/NoConflicts", "z": "Valid/TypeConflict"},
		providers: []string{"a", "z"},
	}, {
		name: "no Service and ExternalName are not valid and provide nothing",
		exports: []Export{
			{Cluster: "a", Since: t0},
			{Cluster: "b", Since: t0, Service: external},
		},
		wantPorts: []mcsv1alpha1.ServicePort{},
		want:      map[string]string{"a": "NoService/NoConflicts", "b": "InvalidServiceType/NoConflicts"},
	}, {
		name: "a port number under another name conflicts",
		exports: []Export{
			{Cluster: "a", Since: t0, Service: svc(port("http", 80))},
			{Cluster: "b", Since: at(time.Second), Service: svc(port("web", 80))},
		},
		wantPorts: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		wantType:  mcsv1alpha1.ClusterSetIP,
		want:      map[string]string{"a": "Valid/NoConflicts", "b": "Valid/PortConflict"},
		providers: []string{"a", "b"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Resolve(Input{Namespace: "ns", Name: "web", Exports: tc.exports, Consumers: []string{"c"}})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.wantPorts, p.Spec.Ports); d != "" {
				t.Errorf("ports (-want +got):\n%s", d)
			}
			if p.Spec.Type != tc.wantType {
				t.Errorf("type = %q, want %q", p.Spec.Type, tc.wantType)
			}
			got := map[string]string{}
			for _, e := range p.Exports {
				got[e.Cluster] = e.Valid.Reason + "/" + e.Conflict.Reason
				if e.Conflict.Status == metav1.ConditionTrue && !strings.Contains(e.Conflict.Message, "oldest") && !strings.Contains(e.Conflict.Message, "older") {
					t.Errorf("conflict message of %s does not say who won: %q", e.Cluster, e.Conflict.Message)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("verdicts (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.providers, p.Providers); d != "" {
				t.Errorf("providers (-want +got):\n%s", d)
			}
		})
	}
}

func TestResolveRejectsBadInput(t *testing.T) {
	for name, in := range map[string]Input{
		"no namespace":  {Name: "web"},
		"bad name":      {Namespace: "ns", Name: "Web_1"},
		"too long":      {Namespace: "ns", Name: strings.Repeat("a", 60)},
		"no cluster":    {Namespace: "ns", Name: "web", Exports: []Export{{}}},
		"cluster twice": {Namespace: "ns", Name: "web", Exports: []Export{{Cluster: "a"}, {Cluster: "a"}}},
	} {
		if _, err := Resolve(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestRender(t *testing.T) {
	p, err := Resolve(Input{Namespace: "ns", Name: "web", Consumers: []string{"c", "a", "c"}, Exports: []Export{
		{Cluster: "a", Since: t0, Service: svc(port("http", 80)), Slices: []discoveryv1.EndpointSlice{slice("web-abc", "10.0.0.1", "10.0.0.2")}},
		{Cluster: "b", Since: t0, Service: svc(port("http", 80)), Slices: []discoveryv1.EndpointSlice{slice("web-xyz", "10.1.0.1")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "c"}, p.Consumers); d != "" {
		t.Errorf("consumers (-want +got):\n%s", d)
	}
	d := Render(p, "c", "10.96.0.10")
	if d.Import.Name != "web" || d.Service.Name != "derived-web" {
		t.Fatalf("names: import %q, service %q", d.Import.Name, d.Service.Name)
	}
	if d2 := cmp.Diff([]string{"10.96.0.10"}, d.Import.Spec.IPs); d2 != "" {
		t.Errorf("import ips (-want +got):\n%s", d2)
	}
	if d2 := cmp.Diff([]mcsv1alpha1.ClusterStatus{{Cluster: "a"}, {Cluster: "b"}}, d.Import.Status.Clusters); d2 != "" {
		t.Errorf("import status.clusters, the exporting clusters (-want +got):\n%s", d2)
	}
	if d.Service.Spec.Selector != nil || d.Service.Spec.ClusterIP != "" || len(d.Service.Spec.Ports) != 1 {
		t.Errorf("derived service spec: %+v", d.Service.Spec)
	}
	if len(d.Slices) != 2 {
		t.Fatalf("slices: %d, want 2", len(d.Slices))
	}
	got := map[string][]string{}
	names := map[string]bool{}
	for _, s := range d.Slices {
		for k, v := range map[string]string{LabelServiceName: "web", ManagedByLabel: ManagedByValue, discoveryv1.LabelServiceName: "derived-web",
			discoveryv1.LabelManagedBy: EndpointSliceController, "karmada.io/managed": "true"} {
			if s.Labels[k] != v {
				t.Errorf("slice %s label %s = %q, want %q", s.Name, k, s.Labels[k], v)
			}
		}
		names[s.Name] = true
		for k, v := range s.Labels {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				t.Errorf("label key %q: %v", k, errs)
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("label %s value %q: %v", k, v, errs)
			}
		}
		for _, ep := range s.Endpoints {
			if ep.NodeName != nil || ep.TargetRef != nil {
				t.Errorf("slice %s keeps the provider's node or pod: %+v", s.Name, ep)
			}
			got[s.Labels[LabelSourceCluster]] = append(got[s.Labels[LabelSourceCluster]], ep.Addresses...)
		}
	}
	if len(names) != 2 {
		t.Errorf("slice names are not distinct: %v", names)
	}
	if d2 := cmp.Diff(map[string][]string{"a": {"10.0.0.1", "10.0.0.2"}, "b": {"10.1.0.1"}}, got); d2 != "" {
		t.Errorf("endpoints by source (-want +got):\n%s", d2)
	}
	// Rendering is stable: the same input names the same slices.
	again := Render(p, "c", "10.96.0.10")
	for i := range again.Slices {
		if again.Slices[i].Name != d.Slices[i].Name {
			t.Errorf("slice name changed between renders: %s vs %s", again.Slices[i].Name, d.Slices[i].Name)
		}
	}
	// A headless service gets a headless derived Service and no ips.
	p.Spec.Type = mcsv1alpha1.Headless
	h := Render(p, "c", "10.96.0.10")
	if h.Service.Spec.ClusterIP != corev1.ClusterIPNone || len(h.Import.Spec.IPs) != 0 {
		t.Errorf("headless: clusterIP %q, ips %v", h.Service.Spec.ClusterIP, h.Import.Spec.IPs)
	}
}

func TestPortsFilter(t *testing.T) {
	p, err := Resolve(Input{Namespace: "ns", Name: "web", Ports: []int32{9090}, Exports: []Export{
		{Cluster: "a", Service: svc(port("http", 80), port("metrics", 9090))}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]mcsv1alpha1.ServicePort{{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090}}, p.Spec.Ports); d != "" {
		t.Errorf("ports (-want +got):\n%s", d)
	}
}

func TestServes(t *testing.T) {
	withPorts := Input{Namespace: "ns", Name: "web", Consumers: []string{"c"}, Exports: []Export{{Cluster: "a", Service: svc(port("http", 80))}}}
	noProviders := Input{Namespace: "ns", Name: "web", Consumers: []string{"c"}, Exports: []Export{{Cluster: "a"}}}
	filtered := withPorts
	filtered.Ports = []int32{443}
	for name, tc := range map[string]struct {
		in      Input
		cluster string
		want    bool
	}{
		"consumer of a service with ports": {withPorts, "c", true},
		"not a consumer":                   {withPorts, "a", false},
		"no valid provider":                {noProviders, "c", false},
		"every port filtered out":          {filtered, "c", false},
	} {
		p, err := Resolve(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Serves(tc.cluster); got != tc.want {
			t.Errorf("%s: Serves(%s) = %v, want %v", name, tc.cluster, got, tc.want)
		}
	}
}

func TestStale(t *testing.T) {
	mk := func(kind, name string, ours bool) client.Object {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		s.SetGroupVersionKind(discoveryv1.SchemeGroupVersion.WithKind(kind))
		if ours {
			s.Labels = Labels("web")
		}
		return s
	}
	desired := []client.Object{mk("EndpointSlice", "keep", true)}
	existing := []client.Object{mk("EndpointSlice", "keep", true), mk("EndpointSlice", "old", true), mk("EndpointSlice", "users", false)}
	got := Stale(desired, existing)
	if len(got) != 1 || got[0].GetName() != "old" {
		t.Errorf("stale = %v, want only old", got)
	}
	if got := Stale(nil, existing); len(got) != 2 {
		t.Errorf("with nothing desired, stale = %d objects, want 2 (never the user's)", len(got))
	}
}

func FuzzResolve(f *testing.F) {
	f.Add("web", "a", "b", int32(80), int32(8080), true)
	f.Fuzz(func(t *testing.T, name, c1, c2 string, p1, p2 int32, headless bool) {
		s2 := svc(port("http", p2))
		if headless {
			s2.Spec.ClusterIP = corev1.ClusterIPNone
		}
		p, err := Resolve(Input{Namespace: "ns", Name: name, Consumers: []string{c1},
			Exports: []Export{{Cluster: c1, Service: svc(port("http", p1))}, {Cluster: c2, Service: s2, Slices: []discoveryv1.EndpointSlice{slice("s", "10.0.0.1")}}}})
		if err != nil {
			return
		}
		_ = Render(p, c1, "")
	})
}

func TestExportedLabelsAndAnnotations(t *testing.T) {
	later := metav1.NewTime(t0.Add(time.Minute))
	p, err := Resolve(Input{Namespace: "ns", Name: "web", Consumers: []string{"c"}, Exports: []Export{
		{Cluster: "b", Since: later, Service: svc(port("http", 80)), Labels: map[string]string{"team": "b"}, Annotations: map[string]string{"note": "x"}},
		{Cluster: "a", Since: t0, Service: svc(port("http", 80)), Labels: map[string]string{"team": "a", ManagedByLabel: "someone"},
			Annotations: map[string]string{"note": "x"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"team": "a", ManagedByLabel: "someone"}, p.Labels); d != "" {
		t.Errorf("labels, the oldest export's (-want +got):\n%s", d)
	}
	b, a := p.Exports[0], p.Exports[1]
	if b.Conflict.Status != metav1.ConditionTrue || b.Conflict.Reason != string(mcsv1alpha1.ServiceExportReasonLabelsConflict) {
		t.Errorf("the newer export's Conflict: %+v, want True LabelsConflict (the annotations agree)", b.Conflict)
	}
	if a.Conflict.Status != metav1.ConditionFalse {
		t.Errorf("the oldest export's Conflict: %+v, want False", a.Conflict)
	}
	imp := Render(p, "c", "").Import
	if imp.Labels["team"] != "a" || imp.Labels[ManagedByLabel] != ManagedByValue {
		t.Errorf("import labels %v: want the exported team=a under Flotilla's own (%s=%s wins)", imp.Labels, ManagedByLabel, ManagedByValue)
	}
	if imp.Annotations["note"] != "x" || imp.Annotations[ExportedMetadataAnnotation] == "" {
		t.Errorf("import annotations %v: want note=x and the fingerprint", imp.Annotations)
	}
	// One exported key fewer: another fingerprint, so the import is written anew.
	p.Labels = map[string]string{ManagedByLabel: "someone"}
	if again := Render(p, "c", "").Import; again.Annotations[ExportedMetadataAnnotation] == imp.Annotations[ExportedMetadataAnnotation] {
		t.Error("the fingerprint did not change with the exported labels")
	}
	// Nothing exported: no annotations at all.
	p.Labels, p.Annotations = nil, nil
	if none := Render(p, "c", "").Import; len(none.Annotations) != 0 {
		t.Errorf("annotations without exported metadata: %v", none.Annotations)
	}
}
