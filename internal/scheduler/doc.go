// Package scheduler is Flotilla's scheduler core: given a ResourceBinding's spec and status
// and a snapshot of the Cluster objects, it decides which clusters the template goes to and
// with how many replicas. It is pure: no Kubernetes client, no I/O, no clock, no globals. The
// scheduler reconciler reads the binding and the clusters, calls NeedsSchedule and Schedule,
// and writes spec.clusters, the applied-placement annotation (AppliedPlacement),
// status.schedulerObservingAffinityName and the Scheduled condition.
//
// # The cycle
//
// Schedule runs one cycle over the snapshot:
//
//  1. Filter. Every filter plugin is prepared once for the binding (selectors compiled,
//     apiVersion parsed), then checks each cluster. A cluster is rejected by the first filter
//     that gives a reason.
//  2. Score. Score plugins rank the feasible clusters (0-100 each, times the plugin's
//     weight, added up).
//  3. Select. Select plugins narrow the feasible clusters, for example to the best two
//     regions of the spread constraints.
//  4. Assign. Replicas are given to the selected clusters (package division):
//     Duplicated (also a nil replicaScheduling, and any binding with 0 replicas such as a
//     ConfigMap) gives every cluster spec.replicas; Divided/Weighted divides by static weights
//     (largest remainder) or, with dynamicWeight AvailableReplicas, by free capacity;
//     Divided/Aggregated uses as few clusters as capacity allows. Clusters left with 0 replicas
//     are dropped unless Options.EnableEmptyWorkloadPropagation is set.
//
// Jobs need nothing special: the detector puts a Job's parallelism in spec.replicas.
//
// With placement.clusterAffinities the cycle runs once per group, starting from the group in
// status.schedulerObservingAffinityName, and the first group that fits wins (Result.AffinityName).
//
// # Overflow affinities
//
// A clusterAffinities group with overflowAffinities (Karmada v1.18) is tried as tiers: the
// group's own clusters, then each overflow group in order; a cluster belongs to the first
// tier it matches, and a cluster of any tier passes the ClusterAffinity filter. Spread
// constraints select lower tiers first. Replicas fill the tiers in order: a scale-up (or a
// first placement) gives each tier what its clusters can still hold, divided within the tier
// as dynamicWeight or Aggregated divides, and only the rest overflows to the next tier; a
// scale-down takes replicas from the last tier holding any first. An unchanged count stays
// where it is, so a preferred cluster with room again pulls nothing back until the template
// scales or a WorkloadRebalancer reschedules it from scratch. The group fails, and the next
// clusterAffinities group is tried, when all its tiers together cannot hold the replicas.
// Overflow needs a division that knows capacity: with Duplicated or static weights it is an
// invalid placement (the CRD schema refuses it too). A template without replicas goes to the
// first tier's clusters.
//
// # Workload affinity
//
// placement.workloadAffinity (Karmada v1.17) places a workload with, or apart from, the
// other workloads of its group: the detector writes the binding's
// spec.workloadAffinityGroups ("key=value" of the template's label under groupByLabelKey)
// and the scheduler controller passes the peers of the same namespace and group in
// Input.Peers. The WorkloadAffinity filter rejects a cluster that holds a workload of the
// anti-affinity group, and one that does not hold every placed workload of the affinity
// group; the first workload of an affinity group goes anywhere. Both rules are hard and apply
// when a binding is scheduled, not afterwards.
//
// When nothing fits, Schedule returns an *UnschedulableError whose message counts the reasons,
// for example "0/5 clusters are available: 2 had untolerated taint
// {cluster.karmada.io/not-ready}, 3 did not match the cluster affinity". An invalid placement
// yields an error wrapping ErrInvalidPlacement; any other error is internal.
//
// # Free capacity
//
// Every division knows how many more replicas each cluster can hold, its room
// (CycleState.Room, EstimateReplicas): what the summed free resources of
// status.resourceSummary allow (AvailableReplicas: allocatable - allocated - allocating,
// divided by spec.replicaRequirements.resourceRequest, resource by resource, extended
// resources such as nvidia.com/gpu included, one pod slot per replica when "pods" is
// allocatable), and, when the cluster reports resourceSummary.nodeGroups, no more than what
// fits node by node on the nodes the replica's nodeSelector, required node affinity and
// tolerations allow (package estimate). Placements the members have not reported yet
// (Input.Held, the scheduler controller's ledger) are taken from the room first. Dynamic
// weights and Aggregated divide by the room; static weights give no cluster more than it
// holds plus its room (division.ByWeightWithin); the ReplicaCapacity filter drops clusters
// without room for one replica (Divided) or for all of them (Duplicated). A cluster that has
// not reported a resourceSummary has unknown room: dynamic weights and Aggregated give it
// nothing, static weights and Duplicated do not limit it.
//
// # Determinism and stability
//
// Ties between otherwise equal clusters are broken by a hash of the template's UID and the
// cluster name (Input.Seed), so a template gets the same answer in every cycle while different
// templates spread differently. Scaling up keeps the replicas where they are and distributes
// only the increase; scaling down takes replicas from the clusters with the most surplus.
//
// # Plugins
//
// The default plugins, in order (package internal/scheduler/plugins/<name>):
//
//   - ClusterDeletion (filter): clusters with a deletionTimestamp are never chosen. It cannot
//     be disabled.
//   - ClusterAffinity (filter): placement.clusterAffinity or the clusterAffinities group being
//     tried (with its overflowAffinities): clusterNames, labelSelector, fieldSelector, exclude.
//   - ClusterEviction (filter): not the clusters of spec.gracefulEvictionTasks.
//   - TaintToleration (filter): NoSchedule and NoExecute taints must be tolerated by
//     placement.clusterTolerations; a cluster the binding is already on only has to tolerate
//     NoExecute.
//   - APIEnablement (filter): the cluster must serve the template's apiVersion and kind.
//   - WorkloadAffinity (filter): placement.workloadAffinity, from Input.Peers.
//   - ReplicaCapacity (filter): the cluster has room (see Free capacity) for one replica of
//     a Divided binding, for all replicas of a Duplicated one.
//   - FederatedResourceQuota (filter): the binding's replicas times its replicaRequirements,
//     added to what the namespace's other bindings request, must stay within the overall
//     limit of each FederatedResourceQuota of its namespace (Input.Quotas); otherwise no
//     cluster fits, and the reason says which resource is exceeded and by how much.
//   - SpreadConstraint (filter and select): placement.spreadConstraints.
//   - ClusterLocality (score): the clusters the binding is already on score highest.
//
// # Multi-component workloads
//
// A binding with spec.components (a customization's componentResource: a Flink job's
// jobmanager and taskmanagers) is placed whole, as Karmada's multiple pod templates
// scheduling does: every chosen cluster runs every component with all its replicas, and a
// cluster is feasible only if one complete set fits its free capacity (the ComponentCapacity
// filter, which cannot be turned off; its rejection says which resource is short and by how
// much). Duplicated sends the set to every selected cluster. Divided does not split the
// components across clusters: the set goes to one cluster, the one it is on while still
// feasible, else the best scored, then the one with room for the most sets. Each target's
// components list the replicas per component; its replicas stay spec.replicas.
//
// # Your own plugin
//
// Implement pkg/scheduler/framework.Plugin (a unique Name) and at least one of FilterPlugin,
// ScorePlugin and SelectPlugin, and pass it in Options.ExtraPlugins (a manager binary:
// pkg/manager.WithSchedulerPlugins); it runs after the default plugins. Options.Plugins
// (pkg/scheduler/config: --scheduler-plugins, --scheduler-config) enables, disables and
// weighs plugins by name; a score plugin's scores are multiplied by its weight:
//
//	p, err := config.ParseFlag("*,-ClusterLocality,CostAware=3")
//	s, err := scheduler.New(scheduler.Options{
//		ExtraPlugins: []framework.Plugin{costaware.New()},
//		Plugins:      p,
//	})
//
// A filter's NewFilter runs once per cycle and returns the per-cluster check, so compile
// selectors and parse the binding there, not in the check.
package scheduler
