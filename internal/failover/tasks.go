package failover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// Producers of graceful eviction tasks (Karmada's names for the controllers that make them).
const (
	ProducerTaintManager        = "TaintManager"
	ProducerApplicationFailover = "ApplicationFailover"
)

// DefaultGracePeriod is how long a Gracefully evicted cluster keeps its Work while the new
// placement is not healthy yet (Karmada's --graceful-eviction-timeout).
const DefaultGracePeriod = 10 * time.Minute

// Leave describes one eviction.
type Leave struct {
	// Cluster is the cluster the binding leaves.
	Cluster string
	// Producer is the controller that decided it (ProducerTaintManager, ...).
	Producer string
	// PurgeMode is how the old cluster's Work goes; empty means Gracefully.
	PurgeMode policyv1alpha1.PurgeMode
	// GracePeriodSeconds bounds a Graceful wait; nil means the caller's default.
	GracePeriodSeconds *int32
	// Preserved is state for the new clusters' objects (statePreservation).
	Preserved map[string]string
	// Now is the task's creation time.
	Now time.Time
}

// Evict takes leave.Cluster out of spec.clusters and records a graceful eviction task for
// it, with the replicas it held and the clusters before the failover. It returns false, and
// changes nothing, when the cluster is not among spec.clusters. A task already there for the
// cluster (an earlier eviction the cluster came back from) is replaced.
func Evict(spec *workv1alpha2.ResourceBindingSpec, leave Leave) bool {
	i := slices.IndexFunc(spec.Clusters, func(tc workv1alpha2.TargetCluster) bool { return tc.Name == leave.Cluster })
	if i < 0 {
		return false
	}
	before := make([]string, 0, len(spec.Clusters))
	for _, tc := range spec.Clusters {
		before = append(before, tc.Name)
	}
	mode := leave.PurgeMode
	if mode == "" {
		mode = policyv1alpha1.PurgeModeGracefully
	}
	task := workv1alpha2.GracefulEvictionTask{
		FromCluster:            leave.Cluster,
		PurgeMode:              mode,
		Replicas:               ptr.To(spec.Clusters[i].Replicas),
		Producer:               leave.Producer,
		GracePeriodSeconds:     leave.GracePeriodSeconds,
		PreservedLabelState:    leave.Preserved,
		ClustersBeforeFailover: before,
		CreationTimestamp:      &metav1.Time{Time: leave.Now},
	}
	spec.Clusters = slices.Delete(slices.Clone(spec.Clusters), i, i+1)
	spec.GracefulEvictionTasks = slices.DeleteFunc(slices.Clone(spec.GracefulEvictionTasks),
		func(t workv1alpha2.GracefulEvictionTask) bool { return t.FromCluster == leave.Cluster })
	spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, task)
	return true
}

// KeepsWork reports whether the old cluster's Work stays while the task is open: every mode
// but Directly.
func KeepsWork(t *workv1alpha2.GracefulEvictionTask) bool {
	return t.PurgeMode != policyv1alpha1.PurgeModeDirectly
}

// Outcome is what Review decided for one task.
type Outcome struct {
	Task workv1alpha2.GracefulEvictionTask
	// Done is true when the task is removed (its Work, if kept, is then deleted).
	Done bool
	// Why says why it was removed, or why it stays when it is overdue.
	Why string
	// Blocked is true for a task whose grace period ended but which stays because the
	// workload has nowhere else to run.
	Blocked bool
}

// Placement is where the scheduler stands with the binding's current spec.
type Placement int

const (
	// PlacementPending: the scheduler has not looked at the current spec yet.
	PlacementPending Placement = iota
	// PlacementDone: it placed the workload on spec.clusters.
	PlacementDone
	// PlacementFailed: it found nowhere to place (all of) it.
	PlacementFailed
)

// View is what Review needs to know besides the binding's spec.
type View struct {
	// Placement is where the scheduler stands.
	Placement Placement
	// Healthy tells, by cluster of spec.clusters, whether its Work renders the current
	// placement, is applied, and the member reports the workload healthy.
	Healthy map[string]bool
	// Recovered tells, by cluster of a task, whether the reason the workload left it is
	// gone (for the taint manager's tasks: no NoExecute taint evicts any more).
	Recovered map[string]bool
	// Now is the time.
	Now time.Time
	// GracePeriod is the grace period of tasks that do not set theirs.
	GracePeriod time.Duration
}

// Review decides which graceful eviction tasks are done:
//   - a task whose cluster is back in spec.clusters is done (the Work is the placement's again);
//   - a task with suppressDeletion stays;
//   - Never stays: the old cluster's workload is removed by hand (delete the task);
//   - while the scheduler has not looked at the current spec, nothing else is decided;
//   - Directly and Gracefully tasks are done once the placement is done and every cluster of
//     spec.clusters is healthy (the new placement took over), or once their grace period has
//     ended, but only if the workload was placed: a workload that has nowhere else to go
//     keeps its old cluster, and the outcome says so (Blocked);
//   - a task for a workload that found nowhere else to go is done when its cluster
//     recovered, so that the scheduler may place the workload there again.
//
// It returns the outcomes in task order, the tasks that stay, and when a remaining task's
// grace period ends (the zero time when none will).
func Review(spec *workv1alpha2.ResourceBindingSpec, v View) (outcomes []Outcome, remaining []workv1alpha2.GracefulEvictionTask, next time.Time) {
	healthy, notHealthy := placementHealthy(spec, v.Healthy)
	for _, t := range spec.GracefulEvictionTasks {
		o := Outcome{Task: t}
		deadline := taskDeadline(&t, v.GracePeriod)
		overdue := !deadline.IsZero() && !v.Now.Before(deadline)
		switch {
		case slices.ContainsFunc(spec.Clusters, func(tc workv1alpha2.TargetCluster) bool { return tc.Name == t.FromCluster }):
			o.Done, o.Why = true, fmt.Sprintf("cluster %s is scheduled again", t.FromCluster)
		case ptr.Deref(t.SuppressDeletion, false):
			o.Why = "suppressDeletion is set"
		case t.PurgeMode == policyv1alpha1.PurgeModeNever:
			o.Why = "purgeMode is Never"
		case v.Placement == PlacementPending:
			o.Why = "waiting for the workload to be placed elsewhere"
		case v.Placement == PlacementDone && healthy:
			o.Done, o.Why = true, fmt.Sprintf("the workload is healthy on %s", names(spec.Clusters))
		case v.Placement == PlacementFailed && v.Recovered[t.FromCluster]:
			o.Done, o.Why = true, fmt.Sprintf("cluster %s recovered before the workload found another cluster", t.FromCluster)
		case overdue && v.Placement == PlacementDone:
			o.Done, o.Why = true, fmt.Sprintf("the grace period ended (%s); still not healthy: %s", deadline.Sub(created(&t)).Round(time.Second), notHealthy)
		case overdue:
			o.Blocked = true
			o.Why = fmt.Sprintf("the grace period ended, but no other cluster fits the workload: keeping it on %s", t.FromCluster)
		default:
			o.Why = "waiting for the workload to be healthy on its new clusters"
			if v.Placement == PlacementFailed {
				o.Why = "waiting for the workload to be placed elsewhere"
			}
		}
		if !o.Done && !overdue && !deadline.IsZero() && (next.IsZero() || deadline.Before(next)) {
			next = deadline
		}
		outcomes = append(outcomes, o)
		if !o.Done {
			remaining = append(remaining, t)
		}
	}
	return outcomes, remaining, next
}

func created(t *workv1alpha2.GracefulEvictionTask) time.Time {
	if t.CreationTimestamp == nil {
		return time.Time{}
	}
	return t.CreationTimestamp.Time
}

// taskDeadline is when a task's grace period ends; the zero time when it has no creation time.
func taskDeadline(t *workv1alpha2.GracefulEvictionTask, defaultGrace time.Duration) time.Time {
	if t.CreationTimestamp == nil {
		return time.Time{}
	}
	grace := defaultGrace
	if t.GracePeriodSeconds != nil {
		grace = time.Duration(max(*t.GracePeriodSeconds, 0)) * time.Second
	}
	return t.CreationTimestamp.Add(grace)
}

// placementHealthy reports whether every cluster of spec.clusters is healthy, and else
// which are not.
func placementHealthy(spec *workv1alpha2.ResourceBindingSpec, healthyOn map[string]bool) (bool, string) {
	var not []string
	for _, tc := range spec.Clusters {
		if !healthyOn[tc.Name] {
			not = append(not, tc.Name)
		}
	}
	return len(spec.Clusters) > 0 && len(not) == 0, strings.Join(not, ", ")
}

func names(tcs []workv1alpha2.TargetCluster) string {
	out := make([]string, 0, len(tcs))
	for _, tc := range tcs {
		out = append(out, tc.Name)
	}
	return strings.Join(out, ", ")
}

// PreservedLabels returns the labels a new cluster's object gets from the binding's tasks:
// the preserved state of every task whose clustersBeforeFailover does not list cluster.
func PreservedLabels(spec *workv1alpha2.ResourceBindingSpec, cluster string) map[string]string {
	var out map[string]string
	for _, t := range spec.GracefulEvictionTasks {
		if len(t.PreservedLabelState) == 0 || slices.Contains(t.ClustersBeforeFailover, cluster) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		for k, v := range t.PreservedLabelState {
			out[k] = v
		}
	}
	return out
}
