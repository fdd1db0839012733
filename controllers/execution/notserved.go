package execution

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/api/wellknown"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
)

// ReasonKindNotServed is the reason of Applied=False on a Work whose manifest is of a kind
// the member does not serve: a custom resource whose CRD is not in the member, or not
// Established, yet. The Work waits for it instead of failing.
const ReasonKindNotServed = "KindNotServed"

// How long a Work waits before it looks again whether its member serves its kind: doubling
// from kindRetryMin to kindRetryMax. A CRD of that kind applied by a Work to the same member
// brings the waiting Works back once it is Established, so the backoff is the safety net.
const (
	kindRetryMin = time.Second
	kindRetryMax = 30 * time.Second
)

// kindNotServedError: the member does not serve gvk.
type kindNotServedError struct {
	gvk     schema.GroupVersionKind
	cluster string
}

func (e *kindNotServedError) Error() string {
	return fmt.Sprintf("%s %s is not served by %s yet; waiting for its CRD", e.gvk.GroupVersion(), e.gvk.Kind, e.cluster)
}

// kindServed tells, after a request for gvk failed with err, whether the member still
// serves gvk. A mapper miss says it does not (the member's mapper looks the group version up
// again before saying so). The mapper never forgets a kind, so a CRD deleted in the member
// since shows otherwise: while it terminates, its custom resources may not be created
// (Forbidden), and once it is gone their requests are NotFound; the CRD itself, or the
// member's discovery, then tells; the refusal itself says so too ("create not allowed while
// custom resource definition is terminating"), which still holds when the CRD is gone by the
// time it is looked at and the member's discovery lists its group a moment longer. Any other
// error says nothing about the kind.
func kindServed(ctx context.Context, m *member.Member, gvk schema.GroupVersionKind, err error) (bool, error) {
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case (apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err)) && strings.Contains(err.Error(), crdTerminatingRefusal):
		return false, nil
	case apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
		if terminating, terr := crdTerminating(ctx, m, gvk); terr != nil || terminating {
			return false, terr
		}
	case !apierrors.IsNotFound(err):
		return true, nil
	}
	list, derr := m.Discovery().ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(derr) {
		return false, nil
	}
	if derr != nil {
		return false, derr
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return true, nil
		}
	}
	return false, nil
}

// crdTerminatingRefusal is how a member refuses to create a custom resource whose CRD is
// being deleted (the apiextensions apiserver's words).
const crdTerminatingRefusal = "custom resource definition is terminating"

// crdTerminating reports whether the member's CRD of gvk is being deleted.
func crdTerminating(ctx context.Context, m *member.Member, gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := m.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdKind.WithVersion("v1"))
	err = m.Client.Get(ctx, client.ObjectKey{Name: mapping.Resource.Resource + "." + gvk.Group}, crd)
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return crd.GetDeletionTimestamp() != nil, nil
}

// waitForKind marks the Work Applied=False (KindNotServed), which records one Warning event
// per transition since the condition does not change while it waits, and has it looked at
// again after its backoff.
func (r *Reconciler) waitForKind(ctx context.Context, cluster string, work *workv1alpha1.Work, gvk schema.GroupVersionKind) (ctrl.Result, error) {
	retry := r.waiting.add(client.ObjectKeyFromObject(work), gvk.GroupKind())
	ctrl.LoggerFrom(ctx).V(1).Info("Member does not serve the kind; waiting", "kind", gvk.String(), "retry", retry)
	msg := (&kindNotServedError{gvk: gvk, cluster: cluster}).Error()
	return ctrl.Result{RequeueAfter: retry}, r.setApplied(ctx, work, metav1.ConditionFalse, ReasonKindNotServed, msg)
}

var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// crdsEstablished acts on the CRDs among objs, applied by work, once the member cache shows
// them Established: it brings back at once the Works of cluster waiting for their kinds, and
// tells KindServed, once per CRD, so that the scheduler learns of the new kind now.
func (r *Reconciler) crdsEstablished(ctx context.Context, cluster string, m *member.Member, work *workv1alpha1.Work, objs []*unstructured.Unstructured) {
	for _, obj := range objs {
		if obj.GroupVersionKind().GroupKind() != crdKind {
			continue
		}
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(obj.GroupVersionKind())
		if err := cachedGet(ctx, m, client.ObjectKeyFromObject(obj), cur); err != nil || !established(cur) {
			continue // its Established update brings this Work back
		}
		group, _, _ := unstructured.NestedString(cur.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(cur.Object, "spec", "names", "kind")
		for _, k := range r.waiting.of(cluster, schema.GroupKind{Group: group, Kind: kind}) {
			r.queues.Add(cluster, k)
		}
		if prev, ok := r.established.Swap(work.UID, cur.GetUID()); r.KindServed != nil && (!ok || prev != cur.GetUID()) {
			r.KindServed(cluster)
		}
	}
}

func established(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" {
			return m["status"] == "True"
		}
	}
	return false
}

// kindWaits are the Works waiting for their member to serve a kind, with how many times in
// a row each found it missing.
type kindWaits struct {
	mu    sync.Mutex
	works map[types.NamespacedName]kindWait
}

type kindWait struct {
	kind     schema.GroupKind
	attempts int
}

// add records one more miss of kind for the Work and returns when to look again.
func (w *kindWaits) add(work types.NamespacedName, kind schema.GroupKind) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.works == nil {
		w.works = map[types.NamespacedName]kindWait{}
	}
	cur := w.works[work]
	if cur.kind != kind {
		cur = kindWait{kind: kind}
	}
	retry := kindRetryMin << min(cur.attempts, 5)
	cur.attempts++
	w.works[work] = cur
	return min(retry, kindRetryMax)
}

// done forgets the Work: it no longer waits.
func (w *kindWaits) done(work types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.works, work)
}

// of returns the Works of cluster waiting for kind.
func (w *kindWaits) of(cluster string, kind schema.GroupKind) []types.NamespacedName {
	ns := wellknown.ExecutionNamespace(cluster)
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []types.NamespacedName
	for k, v := range w.works {
		if k.Namespace == ns && v.kind == kind {
			out = append(out, k)
		}
	}
	return out
}
