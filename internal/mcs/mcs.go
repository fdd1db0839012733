// Package mcs is the pure core of multi-cluster services: given what each provider cluster
// exports (its Service and the EndpointSlices kube-controller-manager built for it), it
// decides what the clusterset service looks like (type, ports, session affinity), which
// exports conflict and why (as the MCS KEP asks: the oldest export wins, the others carry a
// Conflict condition), and renders what every consumer cluster gets: a ServiceImport, a
// derived Service without a selector, and EndpointSlices that copy the providers' endpoints,
// labelled with their source cluster.
//
// It talks to no apiserver: the mcs controller reads the member caches, calls Resolve and Render,
// and writes the result.
package mcs

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// Labels and names of what Flotilla derives in consumer clusters.
const (
	// LabelServiceName names the clusterset service a derived object belongs to.
	LabelServiceName = mcsv1alpha1.LabelServiceName
	// LabelSourceCluster names the provider cluster whose endpoints a derived EndpointSlice
	// copies.
	LabelSourceCluster = mcsv1alpha1.LabelSourceCluster
	// ManagedByLabel marks every object the mcs controller created; only objects with it are
	// ever updated or deleted by the controller.
	ManagedByLabel = "flotilla.io/managed-by"
	// ManagedByValue is ManagedByLabel's value.
	ManagedByValue = "flotilla-mcs"
	// EndpointSliceController is the endpointslice.kubernetes.io/managed-by value of derived
	// EndpointSlices, so that kube-controller-manager leaves them alone.
	EndpointSliceController = "mcs-controller.flotilla.io"
	// KubeEndpointSliceController is the value kube-controller-manager sets on the slices it
	// builds: only those are collected from providers.
	KubeEndpointSliceController = "endpointslice-controller.k8s.io"
	// DerivedServicePrefix prefixes the derived Service's name in consumers.
	DerivedServicePrefix = "derived-"
)

// ErrInvalid is wrapped by errors about input that can never be resolved.
var ErrInvalid = errors.New("invalid multi-cluster service input")

// Export is what one provider cluster offers for the service.
type Export struct {
	// Cluster is the provider's name.
	Cluster string
	// Since orders exports for conflict resolution: the ServiceExport's creation time (the
	// Service's for a MultiClusterService provider). The oldest export wins.
	Since metav1.Time
	// Service is the provider's Service; nil when it has none.
	Service *corev1.Service
	// Slices are the EndpointSlices kube-controller-manager built for the Service.
	Slices []discoveryv1.EndpointSlice
	// Labels and Annotations are the ServiceExport's exportedLabels and exportedAnnotations.
	Labels, Annotations map[string]string
}

// Input is everything Resolve needs for one service.
type Input struct {
	Namespace, Name string
	Exports         []Export
	// Consumers are the clusters that get the imported service.
	Consumers []string
	// Ports, when not empty, keeps only these service ports (a MultiClusterService's
	// spec.ports).
	Ports []int32
}

// ExportStatus is the verdict on one export: the Valid and Conflict conditions of its
// ServiceExport, and whether its endpoints are part of the service.
type ExportStatus struct {
	Cluster  string
	Valid    metav1.Condition
	Conflict metav1.Condition
	Included bool
}

// Plan is the resolved clusterset service.
type Plan struct {
	Namespace, Name string
	// Spec is the ServiceImport's spec (ips are filled per consumer by Render).
	Spec mcsv1alpha1.ServiceImportSpec
	// Exports are the verdicts, in the order the exports were given.
	Exports []ExportStatus
	// Providers are the clusters whose endpoints are imported, sorted.
	Providers []string
	// Consumers are the clusters that get the imported service, sorted.
	Consumers []string
	// Labels and Annotations go on the ServiceImport: the oldest valid export's
	// exportedLabels and exportedAnnotations.
	Labels, Annotations map[string]string

	slices []sourcedSlice
}

type sourcedSlice struct {
	cluster string
	slice   *discoveryv1.EndpointSlice
}

// Serves says whether the cluster gets derived objects: it is a consumer, and the service
// has providers and something to expose (ports, or headless). A service with nothing to
// import derives nothing anywhere, so nothing invalid is written.
func (p *Plan) Serves(cluster string) bool {
	return len(p.Providers) > 0 && (len(p.Spec.Ports) > 0 || p.Spec.Type == mcsv1alpha1.Headless) &&
		slices.Contains(p.Consumers, cluster)
}

// ExportedMetadataAnnotation on a ServiceImport is a fingerprint of the exported labels and
// annotations it carries: when they change, the import is written anew, and server-side
// apply removes the keys no longer exported.
const ExportedMetadataAnnotation = "flotilla.io/exported-metadata"

// exportedFingerprint is a short hash of the exported labels and annotations.
func exportedFingerprint(labels, annotations map[string]string) string {
	h := sha256.New()
	for _, m := range []map[string]string{labels, annotations} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(h, "%s=%s\x00", k, m[k])
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// DerivedServiceName is the name of the derived Service of a clusterset service.
func DerivedServiceName(name string) string { return DerivedServicePrefix + name }

// Resolve decides the clusterset service from its exports.
func Resolve(in Input) (*Plan, error) {
	if errs := validation.IsDNS1035Label(in.Name); len(errs) > 0 {
		return nil, fmt.Errorf("%w: service name %q: %s", ErrInvalid, in.Name, strings.Join(errs, "; "))
	}
	if len(DerivedServiceName(in.Name)) > validation.DNS1035LabelMaxLength {
		return nil, fmt.Errorf("%w: service name %q is too long for its derived Service %q (at most %d characters)",
			ErrInvalid, in.Name, DerivedServiceName(in.Name), validation.DNS1035LabelMaxLength-len(DerivedServicePrefix))
	}
	if in.Namespace == "" {
		return nil, fmt.Errorf("%w: service %q has no namespace", ErrInvalid, in.Name)
	}
	seen := map[string]bool{}
	for _, e := range in.Exports {
		if e.Cluster == "" {
			return nil, fmt.Errorf("%w: an export of %s/%s names no cluster", ErrInvalid, in.Namespace, in.Name)
		}
		if seen[e.Cluster] {
			return nil, fmt.Errorf("%w: cluster %s exports %s/%s twice", ErrInvalid, e.Cluster, in.Namespace, in.Name)
		}
		seen[e.Cluster] = true
	}

	p := &Plan{Namespace: in.Namespace, Name: in.Name, Exports: make([]ExportStatus, len(in.Exports))}
	p.Consumers = slices.Clone(in.Consumers)
	slices.Sort(p.Consumers)
	p.Consumers = slices.Compact(p.Consumers)

	// Oldest first, then by cluster name: the order in which exports claim the service's
	// properties.
	order := make([]int, len(in.Exports))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ea, eb := in.Exports[a], in.Exports[b]
		if c := ea.Since.Compare(eb.Since.Time); c != 0 {
			return c
		}
		return cmp.Compare(ea.Cluster, eb.Cluster)
	})

	var winner *Export
	ports := []mcsv1alpha1.ServicePort{}
	portOwner := map[string]string{} // port name → cluster that defined it
	for _, i := range order {
		e := &in.Exports[i]
		st := ExportStatus{Cluster: e.Cluster}
		st.Valid, st.Included = validity(e.Service)
		if !st.Included {
			st.Conflict = condition(mcsv1alpha1.ServiceExportConditionConflict, metav1.ConditionFalse,
				mcsv1alpha1.ServiceExportReasonNoConflicts, "The export is not valid, so it takes no part in the service")
			p.Exports[i] = st
			continue
		}
		var reasons, msgs []string
		if winner == nil {
			winner = e
			p.Spec.Type = importType(e.Service)
			p.Spec.SessionAffinity = e.Service.Spec.SessionAffinity
			p.Spec.SessionAffinityConfig = e.Service.Spec.SessionAffinityConfig.DeepCopy()
			p.Labels, p.Annotations = maps.Clone(e.Labels), maps.Clone(e.Annotations)
		} else {
			if t := importType(e.Service); t != p.Spec.Type {
				reasons = append(reasons, string(mcsv1alpha1.ServiceExportReasonTypeConflict))
				msgs = append(msgs, fmt.Sprintf("type %s conflicts with %s of %s, the oldest export, whose type is used", t, p.Spec.Type, winner.Cluster))
			}
			if e.Service.Spec.SessionAffinity != p.Spec.SessionAffinity {
				reasons = append(reasons, string(mcsv1alpha1.ServiceExportReasonSessionAffinityConflict))
				msgs = append(msgs, fmt.Sprintf("sessionAffinity %q conflicts with %q of %s, the oldest export, whose value is used",
					e.Service.Spec.SessionAffinity, p.Spec.SessionAffinity, winner.Cluster))
			}
			if !maps.Equal(e.Labels, p.Labels) {
				reasons = append(reasons, string(mcsv1alpha1.ServiceExportReasonLabelsConflict))
				msgs = append(msgs, fmt.Sprintf("exportedLabels differ from those of %s, the oldest export, which are used", winner.Cluster))
			}
			if !maps.Equal(e.Annotations, p.Annotations) {
				reasons = append(reasons, string(mcsv1alpha1.ServiceExportReasonAnnotationsConflict))
				msgs = append(msgs, fmt.Sprintf("exportedAnnotations differ from those of %s, the oldest export, which are used", winner.Cluster))
			}
		}
		for _, sp := range e.Service.Spec.Ports {
			want := servicePort(sp)
			j := slices.IndexFunc(ports, func(x mcsv1alpha1.ServicePort) bool { return x.Name == want.Name })
			if j < 0 {
				if k := slices.IndexFunc(ports, func(x mcsv1alpha1.ServicePort) bool { return x.Port == want.Port && x.Protocol == want.Protocol }); k >= 0 {
					msgs = append(msgs, fmt.Sprintf("port %d/%s is named %q here but %q in %s, the older export, whose port is used",
						want.Port, want.Protocol, want.Name, ports[k].Name, portOwner[ports[k].Name]))
					reasons = appendOnce(reasons, string(mcsv1alpha1.ServiceExportReasonPortConflict))
					continue
				}
				ports = append(ports, want)
				portOwner[want.Name] = e.Cluster
				continue
			}
			if ports[j].Port != want.Port || ports[j].Protocol != want.Protocol {
				msgs = append(msgs, fmt.Sprintf("port %q is %d/%s here but %d/%s in %s, the older export, whose port is used",
					want.Name, want.Port, want.Protocol, ports[j].Port, ports[j].Protocol, portOwner[want.Name]))
				reasons = appendOnce(reasons, string(mcsv1alpha1.ServiceExportReasonPortConflict))
			}
		}
		if len(reasons) > 0 {
			st.Conflict = condition(mcsv1alpha1.ServiceExportConditionConflict, metav1.ConditionTrue,
				mcsv1alpha1.ServiceExportConditionReason(strings.Join(reasons, ",")), strings.Join(msgs, "; "))
		} else {
			st.Conflict = condition(mcsv1alpha1.ServiceExportConditionConflict, metav1.ConditionFalse,
				mcsv1alpha1.ServiceExportReasonNoConflicts, "No conflicts with the other exports")
		}
		p.Exports[i] = st
		p.Providers = append(p.Providers, e.Cluster)
		for k := range e.Slices {
			s := &e.Slices[k]
			p.slices = append(p.slices, sourcedSlice{cluster: e.Cluster, slice: s})
		}
	}
	if len(in.Ports) > 0 {
		ports = slices.DeleteFunc(ports, func(x mcsv1alpha1.ServicePort) bool { return !slices.Contains(in.Ports, x.Port) })
	}
	p.Spec.Ports = ports
	slices.Sort(p.Providers)
	slices.SortFunc(p.slices, func(a, b sourcedSlice) int {
		return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.slice.Name, b.slice.Name))
	})
	return p, nil
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func validity(svc *corev1.Service) (metav1.Condition, bool) {
	switch {
	case svc == nil:
		return condition(mcsv1alpha1.ServiceExportConditionValid, metav1.ConditionFalse, mcsv1alpha1.ServiceExportReasonNoService,
			"The cluster has no Service of this name and namespace"), false
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return condition(mcsv1alpha1.ServiceExportConditionValid, metav1.ConditionFalse, mcsv1alpha1.ServiceExportReasonInvalidServiceType,
			"An ExternalName Service cannot be exported"), false
	}
	return condition(mcsv1alpha1.ServiceExportConditionValid, metav1.ConditionTrue, mcsv1alpha1.ServiceExportReasonValid,
		"The Service is exported"), true
}

func condition(t mcsv1alpha1.ServiceExportConditionType, s metav1.ConditionStatus, r mcsv1alpha1.ServiceExportConditionReason, msg string) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: s, Reason: string(r), Message: msg}
}

func importType(svc *corev1.Service) mcsv1alpha1.ServiceImportType {
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return mcsv1alpha1.Headless
	}
	return mcsv1alpha1.ClusterSetIP
}

func servicePort(sp corev1.ServicePort) mcsv1alpha1.ServicePort {
	proto := sp.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return mcsv1alpha1.ServicePort{Name: sp.Name, Protocol: proto, AppProtocol: sp.AppProtocol, Port: sp.Port}
}

// Derived is what one consumer cluster gets.
type Derived struct {
	Import  *mcsv1alpha1.ServiceImport
	Service *corev1.Service
	Slices  []*discoveryv1.EndpointSlice
}

// Objects returns the derived objects, ServiceImport and Service first.
func (d *Derived) Objects() []client.Object {
	out := []client.Object{d.Import, d.Service}
	for _, s := range d.Slices {
		out = append(out, s)
	}
	return out
}

// Stale returns the existing derived objects that are not desired (compared by kind and
// name), in the order given. Only objects carrying ManagedByLabel=ManagedByValue are ever
// returned: what Flotilla did not create is never stale.
func Stale(desired, existing []client.Object) []client.Object {
	want := map[string]bool{}
	for _, o := range desired {
		want[objectKey(o)] = true
	}
	var out []client.Object
	for _, o := range existing {
		if o.GetLabels()[ManagedByLabel] != ManagedByValue || want[objectKey(o)] {
			continue
		}
		out = append(out, o)
	}
	return out
}

func objectKey(o client.Object) string {
	return o.GetObjectKind().GroupVersionKind().GroupKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// Labels returns the labels every derived object of the service carries.
func Labels(name string) map[string]string {
	return map[string]string{
		LabelServiceName:       name,
		ManagedByLabel:         ManagedByValue,
		wellknown.ManagedLabel: wellknown.ManagedLabelValue,
	}
}

// Render returns what consumer gets of the plan. clusterIP is the derived Service's cluster
// IP in that consumer, when it has one yet (it becomes the ServiceImport's ips).
func Render(p *Plan, consumer, clusterIP string) *Derived {
	derivedName := DerivedServiceName(p.Name)
	// The exported labels and annotations, under Flotilla's own labels (which win), and a
	// fingerprint of them, so that one removed from the export is removed from the import.
	labels := maps.Clone(p.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, Labels(p.Name))
	annotations := maps.Clone(p.Annotations)
	if len(p.Labels)+len(p.Annotations) > 0 {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[ExportedMetadataAnnotation] = exportedFingerprint(p.Labels, p.Annotations)
	}
	imp := &mcsv1alpha1.ServiceImport{
		TypeMeta:   metav1.TypeMeta{APIVersion: mcsv1alpha1.SchemeGroupVersion.String(), Kind: "ServiceImport"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Labels: labels, Annotations: annotations},
		Spec:       *p.Spec.DeepCopy(),
	}
	if imp.Spec.Type == mcsv1alpha1.ClusterSetIP && clusterIP != "" && clusterIP != corev1.ClusterIPNone {
		imp.Spec.IPs = []string{clusterIP}
	}
	// The exporting clusters the service is derived from (its status subresource).
	for _, c := range p.Providers {
		imp.Status.Clusters = append(imp.Status.Clusters, mcsv1alpha1.ClusterStatus{Cluster: c})
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: derivedName, Labels: Labels(p.Name)},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			SessionAffinity:       p.Spec.SessionAffinity,
			SessionAffinityConfig: p.Spec.SessionAffinityConfig.DeepCopy(),
		},
	}
	if p.Spec.Type == mcsv1alpha1.Headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	for _, sp := range p.Spec.Ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: sp.Name, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol, Port: sp.Port})
	}
	d := &Derived{Import: imp, Service: svc}
	for _, ss := range p.slices {
		d.Slices = append(d.Slices, deriveSlice(p, ss, derivedName))
	}
	_ = consumer
	return d
}

func deriveSlice(p *Plan, ss sourcedSlice, derivedName string) *discoveryv1.EndpointSlice {
	h := sha256.Sum256([]byte(ss.cluster + "/" + ss.slice.Name))
	l := Labels(p.Name)
	l[LabelSourceCluster] = ss.cluster
	l[discoveryv1.LabelServiceName] = derivedName
	l[discoveryv1.LabelManagedBy] = EndpointSliceController
	out := &discoveryv1.EndpointSlice{
		TypeMeta:    metav1.TypeMeta{APIVersion: discoveryv1.SchemeGroupVersion.String(), Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Namespace: p.Namespace, Name: derivedName + "-" + hex.EncodeToString(h[:])[:12], Labels: l},
		AddressType: ss.slice.AddressType,
		Endpoints:   make([]discoveryv1.Endpoint, 0, len(ss.slice.Endpoints)),
	}
	for _, ep := range ss.slice.Endpoints {
		c := ep.DeepCopy()
		// The pod and its node live in the provider, not here.
		c.NodeName, c.TargetRef, c.Hints = nil, nil, nil
		out.Endpoints = append(out.Endpoints, *c)
	}
	for _, port := range ss.slice.Ports {
		out.Ports = append(out.Ports, *port.DeepCopy())
	}
	return out
}
