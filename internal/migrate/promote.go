package migrate

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// PromoteOptions say which member object to bring under the fleet.
type PromoteOptions struct {
	// Host writes the host; Member reads the member Cluster (by the host's credential for it).
	Host, Member client.Client
	// Cluster is the member's Cluster name.
	Cluster string
	// GVK, Namespace and Name name the object in the member.
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Dependencies also promotes the ConfigMaps, Secrets, ServiceAccounts and
	// PersistentVolumeClaims the workload uses (the interpreter's dependencies), and
	// propagates them with it (propagateDeps).
	Dependencies bool
	// OptIn opts the namespace in when it is not (it holds every template in it).
	OptIn bool
	// DryRun writes nothing.
	DryRun bool
}

// Promote takes a workload that runs in one member and makes it the fleet's: its template
// (and, with Dependencies, its dependencies' templates) in the host, and a PropagationPolicy
// pinned to that member with conflictResolution: Overwrite, so that the member objects are
// taken over in place (the template is the member object as it is, so nothing in it changes
// and no pod restarts). It returns what it created, or would create.
func Promote(ctx context.Context, o PromoteOptions) ([]Item, error) {
	if o.Namespace == "" {
		return nil, fmt.Errorf("%s %s is cluster-scoped: promote takes namespaced workloads (write a ClusterPropagationPolicy for it instead)", o.GVK.Kind, o.Name)
	}
	obj, err := readMember(ctx, o.Member, o.GVK, o.Namespace, o.Name)
	if err != nil {
		return nil, err
	}
	objs := []*unstructured.Unstructured{obj}
	if o.Dependencies {
		deps, err := interpreter.Interpreter{}.GetDependencies(obj)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: its dependencies: %w", o.GVK.Kind, o.Namespace, o.Name, err)
		}
		for _, d := range deps {
			ns := d.Namespace
			if ns == "" {
				ns = o.Namespace
			}
			if d.Name == "" {
				continue // a label selector: not promoted
			}
			dep, err := readMember(ctx, o.Member, schema.FromAPIVersionAndKind(d.APIVersion, d.Kind), ns, d.Name)
			if apierrors.IsNotFound(err) {
				continue // the workload refers to it, but the member does not have it
			}
			if err != nil {
				return nil, err
			}
			objs = append(objs, dep)
		}
	}
	var items []Item
	if o.Namespace != "" {
		it, err := promoteNamespace(ctx, o)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	pp, err := toUnstructured(promotePolicy(o))
	if err != nil {
		return nil, err
	}
	for _, u := range append([]*unstructured.Unstructured{pp}, templatesOf(objs)...) {
		it := Item{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Action: Create}
		if !o.DryRun {
			if err := o.Host.Create(ctx, u); err != nil {
				if !apierrors.IsAlreadyExists(err) {
					return items, fmt.Errorf("create %s %s/%s in the host: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
				}
				it.Action, it.Reason = Unchanged, "already in the host; left as it is"
			}
		}
		items = append(items, it)
	}
	return items, nil
}

func readMember(ctx context.Context, member client.Reader, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := member.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		return nil, fmt.Errorf("read %s %s/%s in the member: %w", gvk.Kind, ns, name, err)
	}
	if obj.GetLabels()[wellknown.ManagedLabel] == wellknown.ManagedLabelValue {
		return nil, fmt.Errorf("%s %s/%s in the member is managed by a control plane already (%s): promote takes workloads no control plane manages",
			gvk.Kind, ns, name, wellknown.ManagedLabel)
	}
	return obj, nil
}

// promoteNamespace checks, or with OptIn makes, the namespace opted in, and waits for the
// hold when it opted it in.
func promoteNamespace(ctx context.Context, o PromoteOptions) (Item, error) {
	it, err := optIn(ctx, o.Host, o.Namespace, o.OptIn, o.DryRun)
	if err != nil || it.Action != OptIn || o.DryRun {
		return it, err
	}
	return it, waitForHold(ctx, o.Host, o.Namespace, holdTimeout)
}

// promotePolicy pins the workload to its member, taking the member's objects over.
func promotePolicy(o PromoteOptions) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.GroupVersion.String(), Kind: "PropagationPolicy"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: "promote-" + strings.ToLower(o.GVK.Kind) + "-" + o.Name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors:  []policyv1alpha1.ResourceSelector{{APIVersion: o.GVK.GroupVersion().String(), Kind: o.GVK.Kind, Name: o.Name}},
			Placement:          policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{o.Cluster}}},
			ConflictResolution: policyv1alpha1.ConflictOverwrite,
			PropagateDeps:      o.Dependencies,
		},
	}
}

// memberOnly are annotations a member's controllers or kubectl write: not the template's.
var memberOnly = []string{"deployment.kubernetes.io/revision", "kubectl.kubernetes.io/last-applied-configuration"}

// templatesOf are the host templates of member objects: Copy, without what the member made
// (its controllers' annotations, a Service's allocated IPs, a PVC's bound volume, a
// ServiceAccount's token secrets), which Flotilla keeps in the member anyway.
func templatesOf(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		t := Copy(obj)
		ann := t.GetAnnotations()
		for _, k := range memberOnly {
			delete(ann, k)
		}
		if len(ann) == 0 {
			ann = nil
		}
		t.SetAnnotations(ann)
		switch t.GroupVersionKind().GroupKind() {
		case schema.GroupKind{Kind: "Service"}:
			unstructured.RemoveNestedField(t.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(t.Object, "spec", "clusterIPs")
		case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
			unstructured.RemoveNestedField(t.Object, "spec", "volumeName")
		case schema.GroupKind{Kind: "ServiceAccount"}:
			unstructured.RemoveNestedField(t.Object, "secrets")
		}
		out = append(out, t)
	}
	return out
}

func toUnstructured(pp *policyv1alpha1.PropagationPolicy) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pp)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: u}
	unstructured.RemoveNestedField(out.Object, "metadata", "creationTimestamp")
	return out, nil
}

// holdTimeout bounds promote's wait for the hold in a namespace it opted in.
const holdTimeout = 2 * time.Minute
