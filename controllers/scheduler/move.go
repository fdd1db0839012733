package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/bindings"
	"github.com/flotilla-io/flotilla/internal/descheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// Moved is what Move placed.
type Moved struct {
	// Take is, by cluster, how many replicas left it: take, or fewer when the other clusters
	// have room for fewer.
	Take map[string]int32
	// Clusters is the new spec.clusters.
	Clusters []workv1alpha2.TargetCluster
}

// ErrNoRoomElsewhere: no other cluster has room for one of the replicas to move.
var ErrNoRoomElsewhere = errors.New("no other cluster has room for them")

// Move takes replicas that stay unschedulable off a binding's clusters (take, by cluster: the
// descheduler's decision) and places them elsewhere in the same write: a scheduling cycle
// from the binding's clusters less take, in which the clusters that give replicas up have no
// room, so that the replicas taken off are placed on clusters with room by the estimate
// (and held in the ledger as any placement). What every cluster keeps stays
// (descheduler.CheckNoDip). When the other clusters have room for fewer than take, as many as
// fit move (fewer from the clusters last by name); when they have room for none, nothing is
// written and the error wraps ErrNoRoomElsewhere with the scheduler's reason.
//
// It writes spec.clusters and the applied-placement annotation in one patch (optimistically
// locked on the binding read), then the scheduler's status, as a reconcile that places it.
func (r *Reconciler) Move(ctx context.Context, rb client.Object, take map[string]int32) (Moved, error) {
	spec, status := bindings.Spec(rb), bindings.Status(rb)
	clusters, err := r.clusters(ctx)
	if err != nil {
		return Moved{}, err
	}
	peers, err := r.peers(ctx, rb)
	if err != nil {
		return Moved{}, err
	}
	quotas, err := r.quotas(ctx, rb)
	if err != nil {
		return Moved{}, err
	}
	placement, err := scheduler.AppliedPlacement(spec.Placement)
	if err != nil {
		return Moved{}, err
	}
	unlock := r.lockLedger()
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	held := r.held(clusters)
	try := func(t map[string]int32) (scheduler.Result, error) {
		reduced := *spec
		reduced.Clusters = descheduler.Reduce(spec.Clusters, t)
		noRoom := map[string]bool{}
		for name := range maps.Keys(t) {
			noRoom[name] = true
		}
		result, err := r.Scheduler.Schedule(scheduler.Input{Spec: &reduced, Status: status, Annotations: rb.GetAnnotations(),
			Peers: peers, Quotas: quotas, Held: held, NoRoomOn: noRoom}, clusters)
		if err != nil {
			return result, err
		}
		return result, descheduler.CheckNoDip(reduced.Clusters, result.Clusters, t, spec.Replicas)
	}
	result, err := try(take)
	if err != nil {
		// Fewer, if fewer fit: the most that do (a cycle takes microseconds). m = total-1-i
		// goes down as i goes up, and what fits for m fits for less.
		total := descheduler.Total(take)
		i := sort.Search(int(max(total-1, 0)), func(i int) bool {
			_, err := try(descheduler.Fewer(take, total-1-int32(i)))
			return err == nil
		})
		m := total - 1 - int32(i)
		if m <= 0 {
			return Moved{}, fmt.Errorf("%w: %v", ErrNoRoomElsewhere, err)
		}
		take = descheduler.Fewer(take, m)
		if result, err = try(take); err != nil {
			return Moved{}, fmt.Errorf("%w: %v", ErrNoRoomElsewhere, err)
		}
	}
	before := rb.DeepCopyObject().(client.Object)
	r.hold(rb, spec.Clusters, result.Clusters, clusters)
	unlock()
	locked = false
	place(rb, result.Clusters, placement)
	if err := r.Client.Patch(ctx, rb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if r.Ledger != nil {
			r.Ledger.Forget(ledgerKey(rb, client.ObjectKeyFromObject(rb)))
		}
		return Moved{}, err
	}
	now := metav1.NewTime(r.now())
	cond := bindings.Condition(status.Conditions, scheduler.ScheduledCondition(result.Clusters, rb.GetGeneration()))
	if err := r.applyStatus(ctx, rb, schedulerStatus{cond: cond, lastScheduled: &now,
		observedGeneration: rb.GetGeneration(), affinityName: result.AffinityName}, false); err != nil {
		return Moved{Take: take, Clusters: result.Clusters}, err
	}
	r.observed.Store(client.ObjectKeyFromObject(rb), observedMemo(rb, cond))
	return Moved{Take: take, Clusters: result.Clusters}, nil
}
