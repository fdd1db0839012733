// Package clusterstatus is what the cluster controller concludes from what it observed of a
// member cluster, as pure functions: the Ready condition from health probes (smoothed), the
// system taints that follow it, apiEnablements from discovery, and the node and resource
// summaries from paged lists of Nodes and Pods.
//
// It imports no client. Summarize takes the member's list functions and walks them page by
// page, so a member with many thousands of Pods costs one page of memory, not all of them.
package clusterstatus
