// Package failover is the pure core of failover: when a binding must leave a cluster (a
// NoExecute taint it does not tolerate, or tolerates for a time that ran out; an application
// unhealthy there for longer than the policy allows), how it leaves (a graceful eviction
// task that keeps the old cluster's Work until the new placement is healthy, or its grace
// period ends, or for ever), and what state it carries to its new clusters (statePreservation
// rules read from the old cluster's reflected status).
//
// Nothing here reads the clock or the apiserver: callers pass the time and the objects, and
// write the result once (controllers/failover).
package failover
