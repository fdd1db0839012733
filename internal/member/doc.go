// Package member is the member connection manager: one client and one cache per member
// Cluster, built from the Cluster's apiEndpoint and the Secret its secretRef names.
//
// The cluster controller drives it: Connect (re)builds a connection when the endpoint or the
// Secret's content changes (credential rotation reconnects at once), and Probe checks
// /readyz, smoothing failures so that one failed probe does not flap the Cluster. Reconcilers
// that act on members call Get; when a member is not connected they record Unknown and
// return without an error, and their Source wakes them when it connects again, so a
// disconnected member never sends its Works into error backoff.
//
// Each connection's cache holds only objects labelled karmada.io/managed=true (the ones
// Flotilla propagated), with managedFields stripped; Watch starts an informer for one kind and
// its events reach the controllers through Source, which is how drift and status changes in a
// member reach the execution and work-status controllers.
//
// Delivery never waits on a controller (events.go): each running controller has a queue of
// its own that merges the pending events of one object (keeping apart those whose labels or
// annotations differ, as they may map to other requests) and is never full, so a slow
// controller, or a leader-only one that a standby set up but never started (it does not
// subscribe until it starts, and then hears of the members connected already), cannot stop a
// member's informers or probes.
package member
