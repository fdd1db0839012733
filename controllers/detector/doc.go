// Package detector finds resource templates and binds them to the policy that claims them.
//
// It watches, metadata only, every kind the host serves that can be a template (discovered
// at start and again when CRDs change or every DiscoveryInterval), caching only the objects
// of namespaces labelled flotilla.io/propagation=enabled, plus the cluster-scoped kinds that
// ClusterPropagationPolicies name: memory grows with templates, not with the host (see
// watcher).
// For each template it chooses a policy (internal/policymatch), claims the template with
// Karmada's labels and annotations, and creates or updates its ResourceBinding (namespaced
// templates) or ClusterResourceBinding (cluster-scoped ones) with the replicas and
// per-replica requirements from the resource interpreter and the policy's placement.
//
// Deleting a template deletes its binding (and so its member objects, unless
// preserveResourcesOnDeletion). Deleting a policy (or editing it, or the template's labels, so
// that it no longer selects the template) leaves the binding, as Karmada does: without the
// claim or a placement, but with its clusters, so the member objects stay, keep following the
// template, and are deleted with it whichever of the two goes first (see orphan). Opting a
// namespace out releases its templates: their bindings are removed without deleting member
// objects (the binding is marked preserveResourcesOnDeletion first). Unclaimed templates wait
// for the next policy, which takes their binding over.
package detector
