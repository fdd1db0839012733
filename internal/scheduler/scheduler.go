package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
	"github.com/flotilla-io/flotilla/internal/scheduler/division"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/apienablement"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/clusteraffinity"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/clusterdeletion"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/clustereviction"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/clusterlocality"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/federatedquota"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/replicacapacity"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/spreadconstraint"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/tainttoleration"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/workloadaffinity"
	"github.com/flotilla-io/flotilla/pkg/scheduler/config"
	"github.com/flotilla-io/flotilla/pkg/scheduler/framework"
)

// Options configure a Scheduler.
type Options struct {
	// EnableEmptyWorkloadPropagation keeps clusters that a Divided binding leaves with 0
	// replicas in the result; by default they are dropped.
	EnableEmptyWorkloadPropagation bool
	// DisabledPlugins names default plugins to turn off, for example "ClusterLocality".
	// ClusterDeletion cannot be disabled.
	DisabledPlugins []string
	// ExtraPlugins run after the default plugins, in order.
	ExtraPlugins []framework.Plugin
	// Plugins enables, disables and weighs the default and extra plugins (--scheduler-plugins,
	// --scheduler-config). The zero value runs them all with weight 1.
	Plugins config.Plugins
}

// DefaultPlugins returns the default plugins in the order they run. Filters run in this order
// and a rejected cluster is reported with the first filter's reason.
func DefaultPlugins() []framework.Plugin {
	return []framework.Plugin{
		clusterdeletion.New(),
		clusteraffinity.New(),
		clustereviction.New(),
		tainttoleration.New(),
		apienablement.New(),
		workloadaffinity.New(),
		federatedquota.New(),
		replicacapacity.New(),
		spreadconstraint.New(),
		clusterlocality.New(),
	}
}

// Scheduler places bindings on clusters. It holds no state between calls and is safe for
// concurrent use.
type Scheduler struct {
	filters   []framework.FilterPlugin
	scorers   []framework.ScorePlugin
	selectors []framework.SelectPlugin
	// weights are the scorers' weights, in the order of scorers.
	weights        []int64
	emptyWorkloads bool
	plugins        []string
}

// New returns a Scheduler with the default plugins and the extra ones, less the disabled
// ones, score plugins weighted as opts.Plugins says. It fails, naming the field, on a plugin
// name nobody registered, a weight on a plugin that does not score, an attempt to disable
// ClusterDeletion, and duplicate names.
func New(opts Options) (*Scheduler, error) {
	r, err := framework.NewRegistry(append(DefaultPlugins(), opts.ExtraPlugins...)...)
	if err != nil {
		return nil, err
	}
	cfg := opts.Plugins
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, name := range opts.DisabledPlugins {
		cfg.Disabled = append(cfg.Disabled, config.Plugin{Name: name})
	}
	disabled, allDisabled := map[string]bool{}, false
	for i, p := range cfg.Disabled {
		switch {
		case p.Name == config.All:
			allDisabled = true
		case p.Name == clusterdeletion.Name:
			return nil, fmt.Errorf("disable plugin %q: clusters being deleted are never chosen", clusterdeletion.Name)
		case !r.Has(p.Name):
			return nil, fmt.Errorf("plugins.disabled[%d].name: no plugin is named %q (registered: %s)", i, p.Name, strings.Join(r.Names(), ", "))
		}
		disabled[p.Name] = true
	}
	enabled, weights := map[string]bool{}, map[string]int64{}
	for i, p := range cfg.Enabled {
		if !r.Has(p.Name) {
			return nil, fmt.Errorf("plugins.enabled[%d].name: no plugin is named %q (registered: %s)", i, p.Name, strings.Join(r.Names(), ", "))
		}
		enabled[p.Name] = true
		if p.Weight > 0 {
			if !slices.ContainsFunc(r.Scorers(), func(s framework.ScorePlugin) bool { return s.Name() == p.Name }) {
				return nil, fmt.Errorf("plugins.enabled[%d].weight: plugin %s does not score, so it has no weight", i, p.Name)
			}
			weights[p.Name] = int64(p.Weight)
		}
	}
	var off []string
	for _, name := range r.Names() {
		on := name == clusterdeletion.Name || enabled[name] || !allDisabled && !disabled[name]
		if !on {
			off = append(off, name)
		}
	}
	if err := r.Disable(off...); err != nil {
		return nil, err
	}
	s := &Scheduler{
		filters:        r.Filters(),
		scorers:        r.Scorers(),
		selectors:      r.Selectors(),
		emptyWorkloads: opts.EnableEmptyWorkloadPropagation,
		plugins:        r.Names(),
	}
	s.weights = make([]int64, len(s.scorers))
	for i, p := range s.scorers {
		s.weights[i] = max(weights[p.Name()], 1)
	}
	return s, nil
}

// Plugins returns the names of the plugins that run, in order.
func (s *Scheduler) Plugins() []string { return slices.Clone(s.plugins) }

// Input is the binding to schedule.
type Input struct {
	// Spec is the binding's spec: resource, replicas, replicaRequirements, placement, and the
	// current result in clusters.
	Spec *workv1alpha2.ResourceBindingSpec
	// Status is the binding's status; schedulerObservingAffinityName and lastScheduledTime
	// are read.
	Status *workv1alpha2.ResourceBindingStatus
	// Annotations are the binding's annotations; NeedsSchedule reads
	// policy.karmada.io/applied-placement.
	Annotations map[string]string
	// Seed fixes the tie-break order of clusters for this binding. It defaults to the
	// template's UID (spec.resource.uid), then to its kind, namespace and name.
	Seed string
	// Fresh schedules from scratch, as for a new binding: the current spec.clusters and the
	// clusterAffinities group last observed are ignored, so replicas are not kept where they
	// are (ClusterLocality, the division's previous assignment, NoSchedule taints tolerated on
	// clusters already chosen). The scheduler controller sets it for a reschedule triggered
	// by spec.rescheduleTriggeredAt (a WorkloadRebalancer); see RescheduleTriggered.
	Fresh bool
	// Peers are where the other workloads of the binding's workload-affinity groups are
	// (spec.workloadAffinityGroups): the scheduler controller lists the bindings of the same
	// namespace and groups. The zero value places the binding as the first of its groups.
	Peers WorkloadPeers
	// Quotas are the FederatedResourceQuotas of the binding's namespace, each with what the
	// namespace's other bindings request (the scheduler controller reads them); nil for a
	// namespace without one.
	Quotas []NamespaceQuota
	// Held are, by cluster name, the placements of other bindings that the members have not
	// reported running yet (the scheduler controller's Ledger): the estimate of free room
	// subtracts them, so that bindings scheduled at once do not take the same capacity.
	Held map[string][]estimate.Held
	// NoRoomOn names the clusters where the binding's own replicas are unschedulable (the
	// descheduler sets it): their room is 0 whatever the estimate says, so a cycle that
	// places the replicas taken off them puts none back.
	NoRoomOn map[string]bool
}

// NamespaceQuota is a FederatedResourceQuota of the binding's namespace; see
// framework.NamespaceQuota.
type NamespaceQuota = framework.NamespaceQuota

// WorkloadPeers are where a binding's workload-affinity peers are; see
// framework.WorkloadPeers.
type WorkloadPeers = framework.WorkloadPeers

func (in Input) seed() string {
	switch {
	case in.Seed != "":
		return in.Seed
	case in.Spec == nil:
		return ""
	case in.Spec.Resource.UID != "":
		return string(in.Spec.Resource.UID)
	}
	r := in.Spec.Resource
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// forgetCurrent returns the input without the current result: copies of spec and status
// without spec.clusters and status.schedulerObservingAffinityName.
func (in Input) forgetCurrent() Input {
	in.Seed = in.seed() // the tie-break order stays the binding's
	if in.Spec != nil {
		spec := *in.Spec
		spec.Clusters = nil
		in.Spec = &spec
	}
	if in.Status != nil {
		status := *in.Status
		status.SchedulerObservedAffinityName = ""
		in.Status = &status
	}
	return in
}

// Result is a successful placement.
type Result struct {
	// Clusters are the target clusters and their replicas, sorted by name; the value for
	// spec.clusters.
	Clusters []workv1alpha2.TargetCluster
	// AffinityName is the clusterAffinities group used, for
	// status.schedulerObservingAffinityName; empty when the placement has no groups.
	AffinityName string
}

// Schedule runs one scheduling cycle: filter the clusters, score the feasible ones, select
// among them (spread constraints) and assign replicas. With clusterAffinities it runs a cycle
// per group, starting from the group last observed in status, and returns the first group
// that fits; a group with overflowAffinities is filled tier by tier (see the package doc).
//
// It returns an *UnschedulableError when no placement fits, an error wrapping
// ErrInvalidPlacement when the placement is invalid, and any other error for internal
// failures. Cluster names must be unique; nil entries in clusters are ignored.
func (s *Scheduler) Schedule(in Input, clusters []*clusterv1alpha1.Cluster) (Result, error) {
	if in.Fresh {
		in = in.forgetCurrent()
	}
	state := newState(in)
	groups := state.Placement.ClusterAffinities
	if len(groups) == 0 {
		return s.cycle(state, clusters)
	}
	for i := range groups {
		if err := checkOverflow(&groups[i], state.Placement); err != nil {
			return Result{}, err
		}
	}
	failures := &UnschedulableError{}
	for i := firstGroup(groups, state.Status.SchedulerObservedAffinityName); i < len(groups); i++ {
		g := &groups[i]
		result, err := s.cycle(state.WithGroup(g), clusters)
		var unschedulable *UnschedulableError
		if !errors.As(err, &unschedulable) {
			return result, err
		}
		unschedulable.AffinityName = g.AffinityName
		failures.Groups = append(failures.Groups, unschedulable)
	}
	return Result{}, failures
}

// newState returns the state of a cycle for the input.
func newState(in Input) *framework.CycleState {
	state := framework.NewCycleState(in.Spec, in.Status, in.seed())
	state.CapacityAware = needsCapacity(state)
	state.Peers = in.Peers
	state.Quotas = in.Quotas
	state.Room = roomEstimator(state.Spec, in.Held, in.NoRoomOn)
	return state
}

// firstGroup returns the index of the group last scheduled into, or 0.
func firstGroup(groups []policyv1alpha1.ClusterAffinityTerm, observed string) int {
	if observed == "" {
		return 0
	}
	return max(slices.IndexFunc(groups, func(g policyv1alpha1.ClusterAffinityTerm) bool { return g.AffinityName == observed }), 0)
}

// cycle runs filter, score, select and assign for one cluster affinity.
func (s *Scheduler) cycle(state *framework.CycleState, clusters []*clusterv1alpha1.Cluster) (Result, error) {
	feasible, rejections, err := s.filter(state, clusters)
	if err != nil {
		return Result{}, err
	}
	unschedulable := func(reason string) error {
		return &UnschedulableError{Clusters: len(feasible) + len(rejections), Rejections: rejections, Reason: reason}
	}
	if len(feasible) == 0 {
		return Result{}, unschedulable("")
	}
	if err := setTiers(state, feasible); err != nil {
		return Result{}, err
	}
	if err := s.score(state, feasible); err != nil {
		return Result{}, err
	}
	selected, err := s.selectClusters(state, feasible)
	var unfit *framework.UnfitError
	if errors.As(err, &unfit) {
		return Result{}, unschedulable(unfit.Reason)
	}
	if err != nil {
		return Result{}, err
	}
	targets, err := s.assign(state, selected)
	var short *division.InsufficientCapacityError
	if errors.As(err, &short) {
		return Result{}, unschedulable(short.Error())
	}
	if err != nil {
		return Result{}, err
	}
	if err := sortByName(targets); err != nil {
		return Result{}, err
	}
	return Result{Clusters: targets, AffinityName: state.AffinityName}, nil
}

// sortByName sorts the targets and rejects a snapshot that named a cluster twice.
func sortByName(targets []workv1alpha2.TargetCluster) error {
	slices.SortFunc(targets, func(a, b workv1alpha2.TargetCluster) int { return cmp.Compare(a.Name, b.Name) })
	for i := 1; i < len(targets); i++ {
		if targets[i].Name == targets[i-1].Name {
			return fmt.Errorf("cluster %q appears twice in the snapshot", targets[i].Name)
		}
	}
	return nil
}

// filter runs every filter on every cluster and returns the feasible clusters and why the
// others were rejected (sorted by cluster name).
func (s *Scheduler) filter(state *framework.CycleState, clusters []*clusterv1alpha1.Cluster) ([]framework.Candidate, []Rejection, error) {
	type namedFilter struct {
		plugin string
		check  framework.Filter
	}
	filters := make([]namedFilter, 0, len(s.filters))
	for _, p := range s.filters {
		f, err := p.NewFilter(state)
		if err != nil {
			return nil, nil, pluginError(p, err)
		}
		if f != nil {
			filters = append(filters, namedFilter{p.Name(), f})
		}
	}
	if HasComponents(state.Spec) {
		filters = append(filters, namedFilter{ComponentCapacityFilter, componentFilter(state.Spec)})
	}
	feasible := make([]framework.Candidate, 0, len(clusters))
	var rejections []Rejection
next:
	for _, c := range clusters {
		if c == nil {
			continue
		}
		for _, f := range filters {
			if reason := f.check(c); reason != "" {
				rejections = append(rejections, Rejection{Cluster: c.Name, Plugin: f.plugin, Reason: reason})
				continue next
			}
		}
		feasible = append(feasible, framework.Candidate{Cluster: c})
	}
	slices.SortFunc(rejections, func(a, b Rejection) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return feasible, rejections, nil
}

// score fills in each candidate's score, tie-break rank and, when the division needs it, free
// capacity.
func (s *Scheduler) score(state *framework.CycleState, candidates []framework.Candidate) error {
	type weighted struct {
		score  framework.Scorer
		weight int64
	}
	scorers := make([]weighted, 0, len(s.scorers))
	for i, p := range s.scorers {
		f, err := p.NewScorer(state)
		if err != nil {
			return pluginError(p, err)
		}
		if f != nil {
			scorers = append(scorers, weighted{f, s.weights[i]})
		}
	}
	components, replicas := HasComponents(state.Spec), state.Spec.Replicas > 0
	for i := range candidates {
		c := &candidates[i]
		for _, sc := range scorers {
			c.Score += sc.weight * min(max(sc.score(c.Cluster), 0), framework.MaxScore)
		}
		c.Rank = state.Rank(c.Cluster.Name)
		switch {
		case components:
			c.Available = AvailableComponentSets(c.Cluster, state.Spec.Components)
		case replicas:
			room, known := state.RoomOn(c.Cluster)
			c.Room = room
			if !known {
				c.Room = math.MaxInt32
			}
			if state.CapacityAware {
				c.Available = room
			}
		}
	}
	return nil
}

// roomEstimator returns the cycle's CycleState.Room: EstimateReplicas of the binding's
// requirements, once per cluster.
func roomEstimator(spec *workv1alpha2.ResourceBindingSpec, held map[string][]estimate.Held, noRoom map[string]bool) func(*clusterv1alpha1.Cluster) (int32, bool) {
	type room struct {
		replicas int32
		known    bool
	}
	est := estimate.New(spec.ReplicaRequirements)
	request := replicaRequest(spec)
	seen := map[string]room{}
	return func(c *clusterv1alpha1.Cluster) (int32, bool) {
		if r, ok := seen[c.Name]; ok {
			return r.replicas, r.known
		}
		r := room{known: true}
		if !noRoom[c.Name] {
			r.replicas, r.known = EstimateReplicas(c, request, est, held[c.Name])
		}
		seen[c.Name] = r
		return r.replicas, r.known
	}
}

// selectClusters runs the select plugins in turn.
func (s *Scheduler) selectClusters(state *framework.CycleState, candidates []framework.Candidate) ([]framework.Candidate, error) {
	for _, p := range s.selectors {
		selected, err := p.Select(state, candidates)
		if err != nil {
			return nil, pluginError(p, err)
		}
		if len(selected) == 0 {
			return nil, &framework.UnfitError{Reason: fmt.Sprintf("plugin %s selected no cluster", p.Name())}
		}
		candidates = selected
	}
	return candidates, nil
}

// pluginError names the plugin in internal errors; invalid placements and unfit results keep
// their own message.
func pluginError(p framework.Plugin, err error) error {
	var unfit *framework.UnfitError
	if errors.Is(err, framework.ErrInvalidPlacement) || errors.As(err, &unfit) {
		return err
	}
	return fmt.Errorf("scheduler plugin %s: %w", p.Name(), err)
}

// ReplicaRequest returns what one replica of the binding requests
// (spec.replicaRequirements.resourceRequest), nil when it does not say.
func ReplicaRequest(spec *workv1alpha2.ResourceBindingSpec) corev1.ResourceList {
	return replicaRequest(spec)
}

func replicaRequest(spec *workv1alpha2.ResourceBindingSpec) corev1.ResourceList {
	if spec.ReplicaRequirements == nil {
		return nil
	}
	return spec.ReplicaRequirements.ResourceRequest
}
