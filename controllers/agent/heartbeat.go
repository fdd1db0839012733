package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/member"
)

// FieldOwner is the field manager of what the agent writes: its Cluster's status in the
// host, its credential Secret in the member.
const FieldOwner = "flotilla-agent"

// statusCollectionTimeout bounds one collection of the member's status.
const statusCollectionTimeout = 2 * time.Minute

// heartbeat renews the agent's Lease in the host and keeps its Cluster's status: the Ready
// condition from the member connection's probes (the same thresholds as for a Push member)
// and what status collection found. The Lease and the status run on goroutines of their
// own, so a slow collection never delays a renewal.
type heartbeat struct {
	host           client.Client
	reader         client.Reader
	members        *member.Manager
	name           string
	identity       string
	interval       time.Duration
	leaseDuration  time.Duration
	statusInterval time.Duration
	// refresh asks for a status collection now (the member serves a new kind).
	refresh chan struct{}
	// collectedOnce is closed once the first collection found the member's APIs: the
	// Cluster is not reported at all before, so the scheduler never sees it Ready without
	// knowing what it serves.
	collectedOnce chan struct{}
	once          sync.Once

	mu        sync.Mutex
	collected clusterstatus.Collected
	// readiness is the Ready status last written.
	readiness metav1.ConditionStatus
}

// Refresh asks for the member's status to be collected at once.
func (h *heartbeat) Refresh() {
	select {
	case h.refresh <- struct{}{}:
	default:
	}
}

// Start runs until ctx ends; it runs on the elected replica only.
func (h *heartbeat) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { h.renewLoop(ctx) })
	wg.Go(func() { h.collectLoop(ctx) })
	select {
	case <-h.collectedOnce:
	case <-ctx.Done():
		wg.Wait()
		return nil
	}
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		if err := h.writeStatus(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Cannot write the Cluster's status; trying again")
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-t.C:
		}
	}
}

// renewLoop renews the Lease every interval.
func (h *heartbeat) renewLoop(ctx context.Context) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	var lease *coordinationv1.Lease
	for {
		var err error
		if lease, err = h.renew(ctx, lease); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Cannot renew the heartbeat Lease; trying again")
			lease = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// renew updates the Lease (last is what the previous renewal wrote, or nil), creating it
// when there is none. It returns the Lease as written.
func (h *heartbeat) renew(ctx context.Context, last *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(time.Now())
	seconds := int32((h.leaseDuration + time.Second - 1) / time.Second)
	if last == nil {
		last = &coordinationv1.Lease{}
		key := types.NamespacedName{Namespace: wellknown.ExecutionNamespace(h.name), Name: agentauth.HeartbeatLease}
		err := h.reader.Get(ctx, key, last)
		if apierrors.IsNotFound(err) {
			lease := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &h.identity, LeaseDurationSeconds: &seconds,
					AcquireTime: &now, RenewTime: &now},
			}
			if err := h.host.Create(ctx, lease); err != nil {
				return nil, fmt.Errorf("create Lease %s: %w", key, err)
			}
			return lease, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read Lease %s: %w", key, err)
		}
	}
	lease := last.DeepCopy()
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != h.identity {
		lease.Spec.HolderIdentity, lease.Spec.AcquireTime = &h.identity, &now
	}
	lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &seconds, &now
	if err := h.host.Update(ctx, lease); err != nil {
		return nil, fmt.Errorf("renew Lease %s/%s: %w", lease.Namespace, lease.Name, err)
	}
	return lease, nil
}

// collectLoop collects the member's status at once, every statusInterval, and when asked.
func (h *heartbeat) collectLoop(ctx context.Context) {
	t := time.NewTicker(h.statusInterval)
	defer t.Stop()
	for {
		h.collect(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.refresh:
		}
	}
}

func (h *heartbeat) collect(ctx context.Context) {
	mem, err := h.members.Get(h.name)
	if err != nil {
		return // not healthy: Ready says so
	}
	cur := &clusterv1alpha1.Cluster{}
	if err := h.host.Get(ctx, types.NamespacedName{Name: h.name}, cur); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot read the Cluster")
		return
	}
	cctx, cancel := context.WithTimeout(ctx, statusCollectionTimeout)
	defer cancel()
	h.mu.Lock()
	previous := h.collected.APIEnablements
	h.mu.Unlock()
	if previous == nil {
		previous = cur.Status.APIEnablements
	}
	found, err := clusterstatus.Collect(cctx, mem.Kube, cur.Spec.ResourceModels, previous)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot collect all of the member cluster's status; keeping what was collected before")
	}
	h.mu.Lock()
	if found.Version != "" {
		h.collected.Version = found.Version
	}
	if found.APIEnablements != nil {
		h.collected.APIEnablements = found.APIEnablements
	}
	if found.Nodes != nil {
		h.collected.Nodes, h.collected.Resources = found.Nodes, found.Resources
	}
	complete := h.collected.APIEnablements != nil
	h.mu.Unlock()
	if complete {
		h.once.Do(func() { close(h.collectedOnce) })
	}
}

// writeStatus applies the Cluster's status when it differs from what the host has: after a
// collection, a change of Ready, or the host's cluster controller marking the member Unknown
// while the agent was away.
func (h *heartbeat) writeStatus(ctx context.Context) error {
	cur := &clusterv1alpha1.Cluster{}
	if err := h.host.Get(ctx, types.NamespacedName{Name: h.name}, cur); err != nil {
		return fmt.Errorf("read the Cluster: %w", err)
	}
	s := h.members.Status(h.name)
	ready := clusterstatus.ReadyCondition(meta.FindStatusCondition(cur.Status.Conditions, wellknown.ClusterConditionReady),
		clusterstatus.Health{Probed: !s.ProbedAt.IsZero(), Healthy: s.Healthy, Down: s.Down, Failures: s.Failures, LastError: s.LastError})
	ready.ObservedGeneration = cur.Generation
	ready.LastTransitionTime = metav1.Now()
	status := cur.Status.DeepCopy()
	h.mu.Lock()
	if h.collected.Version != "" {
		status.KubernetesVersion = h.collected.Version
	}
	if h.collected.APIEnablements != nil {
		status.APIEnablements = h.collected.APIEnablements
	}
	if h.collected.Nodes != nil {
		status.NodeSummary, status.ResourceSummary = h.collected.Nodes, h.collected.Resources
	}
	h.mu.Unlock()
	meta.SetStatusCondition(&status.Conditions, ready)
	if equality.Semantic.DeepEqual(&cur.Status, status) {
		return nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": content}}
	u.SetGroupVersionKind(clusterv1alpha1.GroupVersion.WithKind("Cluster"))
	u.SetName(h.name)
	if err := h.host.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return err
	}
	if h.readiness != ready.Status {
		h.readiness = ready.Status
		ctrl.LoggerFrom(ctx).Info("Reported the member's readiness", "Ready", ready.Status, "reason", ready.Reason)
	}
	return nil
}
