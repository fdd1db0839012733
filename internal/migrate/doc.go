// Package migrate moves a running Karmada fleet into a Flotilla host without restarting a
// pod: `kubectl flotilla migrate`.
//
// It reads a Karmada control plane (its apiserver, through a kubeconfig; read only) and
// writes into the host, in this order:
//
//  1. the namespaces to move, opted in (flotilla.io/propagation=enabled), waiting until the
//     host hold is in force in each, so that no template lands where the host's own
//     controllers would run it;
//  2. the Clusters: a Push member is joined with a fresh least-privilege credential (join),
//     from a kubeconfig given per member, or built from the Karmada Cluster's own credential
//     when asked to (UseKarmadaCredentials); its labels, taints, provider, region and zones
//     are kept. A Pull member gets the commands to run in it instead (Karmada's agent out,
//     Flotilla's in);
//  3. every kind Flotilla serves: ResourceInterpreterCustomizations, ClusterTaintPolicies,
//     ClusterOverridePolicies, ClusterPropagationPolicies, and the OverridePolicies,
//     PropagationPolicies and MultiClusterServices of the namespaces moved. Kinds Flotilla
//     does not serve are listed as skipped, with the reason;
//  4. the resource templates Karmada propagates in those namespaces (those its
//     ResourceBindings name), each annotated with its UID in Karmada
//     (flotilla.io/adopt-karmada-uid): the member objects Karmada made for it are adopted in
//     place by the execution controller, keeping their UIDs and pods.
//
// It refuses to start while Karmada's controller-manager holds its leader lease (two control
// planes must never write the same member objects), unless told Karmada is stopped. It only
// creates: an object already in the host is left as it is (reported unchanged, or differing),
// so a second run changes nothing. The dry run writes nothing and says, besides what it would
// create, what would become of each member object of the templates moved: adopted, created,
// or a conflict (read through the member kubeconfigs given). Everything done or planned goes
// into a Report, which the command writes as migration-report.yaml.
package migrate
