package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/flotilla-io/flotilla/internal/agentauth"
	"github.com/flotilla-io/flotilla/internal/hostguard"
)

// SecurityDoc is the page whose generated section SecurityTables renders.
const SecurityDoc = "docs/security.md"

// Markers delimit the generated section of SecurityDoc.
const (
	securityBegin = "<!-- BEGIN GENERATED: go test ./internal/deploy/ -run TestSecurityDoc (UPDATE_GOLDEN=1 rewrites) -->"
	securityEnd   = "<!-- END GENERATED -->"
)

// managerReasons says why the manager holds each rule of config/rbac/role.yaml, keyed by
// ruleKey. A rule without a reason fails TestSecurityDoc: every right is explained.
var managerReasons = map[string]string{
	"*|*|":                        "read every kind: templates are whatever kinds users create, custom resources included (metadata-only watches of opted-in namespaces)",
	"*|*/status|":                 "aggregated status of templates (the kinds no host controller owns, and those a customization aggregates)",
	"|namespaces,secrets|":        "namespaces: create and delete execution namespaces karmada-es-<cluster>, create the ClusterProfiles' namespace cluster-inventory, patch only the label flotilla.io/held; secrets: read Push members' credentials (Cluster.spec.secretRef) and Cluster API's kubeconfig Secrets, write the credentials Secrets of members joined from Cluster API (the guard denies the rest: other namespaces, other Secrets, other labels)",
	"|serviceaccounts|":           "Pull agents' ServiceAccounts in execution namespaces (the guard denies any other namespace)",
	",events.k8s.io|events|":      "events on templates, policies, bindings and Clusters",
	"coordination.k8s.io|leases|": "leader election and shard leases in the manager's namespace (the guard denies any other)",
	"admissionregistration.k8s.io|mutatingadmissionpolicies,mutatingadmissionpolicybindings,validatingadmissionpolicies,validatingadmissionpolicybindings|": "create the host hold's policies (create cannot be limited by name); read them to repair drift",
	"admissionregistration.k8s.io|validatingadmissionpolicies,validatingadmissionpolicybindings|flotilla-template-hold,flotilla-template-hold-kept":         "keep the hold's validating policy and bindings as they should be, by name: no other admission policy, the guard included",
	"admissionregistration.k8s.io|mutatingadmissionpolicies,mutatingadmissionpolicybindings|flotilla-template-hold-jobs,flotilla-template-hold-jobs-kept":   "keep the hold's Job policy and bindings, by name",
	"apps.karmada.io|workloadrebalancers|":                                                                        "WorkloadRebalancer: read, and delete when its TTL expires",
	"apps.karmada.io|workloadrebalancers/status|":                                                                 "WorkloadRebalancer status",
	"autoscaling.karmada.io|cronfederatedhpas,federatedhpas|":                                                     "read CronFederatedHPAs and FederatedHPAs (their replicas go on the target's binding, never on the template)",
	"autoscaling.karmada.io|cronfederatedhpas/status,federatedhpas/status|":                                       "CronFederatedHPA status (execution history, fleet replicas) and FederatedHPA status (current and desired replicas, metrics, conditions)",
	"cluster.karmada.io|clusters|":                                                                                "Clusters: finalizer, taints, the host id annotation; create and delete the members joined from Cluster API",
	"cluster.karmada.io|clusters/finalizers|":                                                                     "owner references from objects the Cluster owns (Pull agents' access)",
	"cluster.karmada.io|clusters/status|":                                                                         "Cluster status: health, version, API enablements, resources",
	"config.karmada.io|resourceinterpretercustomizations,resourceinterpreterwebhookconfigurations|":               "read customizations and interpreter webhook configurations",
	"config.karmada.io|resourceinterpretercustomizations/status,resourceinterpreterwebhookconfigurations/status|": "their status (compiled or in use, failed scripts or calls)",
	"cluster.x-k8s.io|clusters|":                                                                                  "read Cluster API Clusters, to join those labelled flotilla.io/join=true",
	"multicluster.x-k8s.io|clusterprofiles,placementdecisions|":                                                   "publish each member as a ClusterProfile and, opted in, each binding's placement as PlacementDecisions (Cluster Inventory API); delete them with their Cluster or binding (the guard allows only those labelled as Flotilla's)",
	"multicluster.x-k8s.io|clusterprofiles/status|":                                                               "ClusterProfile status: health, version, properties, access providers",
	"networking.karmada.io|multiclusterservices|":                                                                 "read MultiClusterServices",
	"networking.karmada.io|multiclusterservices/status|":                                                          "MultiClusterService status",
	"policy.karmada.io|clusteroverridepolicies,clustertaintpolicies,overridepolicies|":                            "read overrides and taint policies",
	"policy.karmada.io|clusterpropagationpolicies,federatedresourcequotas,propagationpolicies|":                   "the policies' permanent-id label, as Karmada's webhook sets it; FederatedResourceQuotas: read by the scheduler (overall) and their controller, which patches only its finalizer (the member quotas go first)",
	"policy.karmada.io|federatedresourcequotas/status|":                                                           "FederatedResourceQuota status: the members' usage aggregated, Ready",
	"rbac.authorization.k8s.io|clusterrolebindings,clusterroles,rolebindings|":                                    "Pull agents' access: flotilla:agent:<cluster> ClusterRoles and bindings, RoleBindings in execution namespaces (the guard denies any other name or namespace); the escalation check limits their rules to rights the manager holds",
	"rbac.authorization.k8s.io|clusterroles|flotilla:agent,flotilla:agent-exchange":                               "bind the Pull agent's two shipped roles in execution namespaces",
	"scheduling.k8s.io|priorityclasses|":                                                                          "schedulePriority from a PriorityClass",
	"work.karmada.io|clusterresourcebindings,resourcebindings|":                                                   "bindings: created by the detector with the claim, updated by the scheduler, binding controller and failover",
	"work.karmada.io|clusterresourcebindings/status,resourcebindings/status,works/status|":                        "binding and Work status",
	"work.karmada.io|works|":                                                                                      "Works: one per binding and cluster, and one per FederatedResourceQuota static assignment (its member ResourceQuota); deletecollection when a Cluster is unjoined",
	"rollouts.flotilla.io|clusterrolloutpolicies,rolloutpolicies|":                                                "read rollout policies (progressive rollouts)",
	"rollouts.flotilla.io|rollouts|":                                                                              "Rollouts: one per ResourceBinding a rollout policy selects, owned by it; deleted when no policy selects the template any more",
	"rollouts.flotilla.io|rollouts/status|":                                                                       "Rollout status: revisions, stages, every cluster's revision, the stable revision's template",
}

func ruleKey(r rbacv1.PolicyRule) string {
	return strings.Join(r.APIGroups, ",") + "|" + strings.Join(r.Resources, ",") + "|" + strings.Join(r.ResourceNames, ",")
}

func code(items []string) string {
	if len(items) == 0 {
		return ""
	}
	q := make([]string, len(items))
	for i, s := range items {
		if s == "" {
			s = `""`
		}
		q[i] = "`" + s + "`"
	}
	return strings.Join(q, ", ")
}

// rulesTable renders rules as a Markdown table, with the reason reason gives each (nil: no
// reason column).
func rulesTable(b *strings.Builder, rules []rbacv1.PolicyRule, reason func(rbacv1.PolicyRule) string) {
	if reason != nil {
		b.WriteString("| API groups | resources | names | verbs | why |\n|---|---|---|---|---|\n")
	} else {
		b.WriteString("| API groups | resources | names | verbs |\n|---|---|---|---|\n")
	}
	for _, r := range rules {
		res := code(r.Resources)
		if len(r.NonResourceURLs) > 0 {
			res = code(r.NonResourceURLs)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |", code(r.APIGroups), res, code(r.ResourceNames), strings.Join(r.Verbs, ", "))
		if reason != nil {
			fmt.Fprintf(b, " %s |", reason(r))
		}
		b.WriteString("\n")
	}
}

// SecurityTables renders the generated section of docs/security.md: what each identity may
// do, from the generated RBAC and the guard policies. It fails when a rule of the manager's
// role has no reason.
func SecurityTables(root string, member []rbacv1.PolicyRule) (string, error) {
	roles, err := ReadGeneratedRoles(root)
	if err != nil {
		return "", err
	}
	cluster, namespaced := roles.GeneratedRules()
	var missing []string
	var b strings.Builder
	b.WriteString(securityBegin + "\n\n")
	b.WriteString("### The manager on the host\n\n")
	b.WriteString("`config/rbac/role.yaml`, generated from the controllers' `+kubebuilder:rbac` markers. " +
		"Enforced by `internal/deploy` (`TestLeastPrivilege`, `TestNoWriteWildcard`, `TestHelmMatchesKustomize`) " +
		"and by the e2e suite, whose manager runs as its own ServiceAccount with exactly this role and the guard below.\n\n")
	rulesTable(&b, cluster, func(r rbacv1.PolicyRule) string {
		why, ok := managerReasons[ruleKey(r)]
		if !ok {
			missing = append(missing, ruleKey(r))
		}
		return why
	})
	for ns, rules := range namespaced {
		fmt.Fprintf(&b, "\nIn namespace `%s`:\n\n", ns)
		rulesTable(&b, rules, func(r rbacv1.PolicyRule) string {
			why, ok := managerReasons[ruleKey(r)]
			if !ok {
				missing = append(missing, ruleKey(r))
			}
			return why
		})
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("rules of the manager's role without a reason in internal/deploy/security.go managerReasons: %s", strings.Join(missing, "; "))
	}

	b.WriteString("\n### The manager's guard (`" + hostguard.Name + "`)\n\n")
	b.WriteString("A ValidatingAdmissionPolicy matched on the manager's username denies it every create, update, delete " +
		"and connect that no line below allows (`internal/hostguard`; shipped as `config/rbac/manager_guard.yaml` and the chart's " +
		"`templates/guard.yaml`). Enforced by the `internal/hostguard` suite against a real apiserver, with the manager's identity " +
		"given cluster-admin so that only the guard stands in its way.\n\n")
	b.WriteString("| allowed write | condition |\n|---|---|\n")
	for _, r := range hostguard.Rules("<manager namespace>") {
		fmt.Fprintf(&b, "| %s | `%s` |\n", r.Reason, strings.ReplaceAll(r.Expression, "|", `\|`))
	}

	if member != nil {
		b.WriteString("\n### A Push member's credential (`kubectl flotilla join`)\n\n")
		b.WriteString("The ClusterRole `join` creates in the member for the ServiceAccount whose token the host holds " +
			"(`internal/join`), here for a plain Kubernetes member's API groups (a member's own groups are found by discovery; " +
			"the Pull agent's ServiceAccount in its member gets the same). The member guard `flotilla-<cluster>-guard` refuses " +
			"what RBAC cannot say: writes in `kube-system`, `kube-public`, `kube-node-lease`, CONNECT (exec, attach, port-forward, " +
			"proxy), TokenRequests and ephemeral containers; [member-rights.md](member-rights.md) explains each line. " +
			"Enforced by `internal/join`'s `TestMemberCredential` against a real member apiserver, and the e2e spec " +
			"\"The member credential\".\n\n")
		rulesTable(&b, member, nil)
	}

	b.WriteString("\n### A Pull agent on the host\n\n")
	b.WriteString("`flotilla:agent`, bound in its execution namespace only, and `flotilla:agent:<cluster>` for its own Cluster " +
		"and to read the ResourceInterpreterCustomizations, whose retention, status reflection and health scripts it runs on its " +
		"member as the manager does on a Push member (`internal/agentauth`, shipped as `config/rbac/agent_roles.yaml`; " +
		"the cluster controller makes `flotilla:agent:<cluster>`). Limited by RBAC alone: the manager's guard matches the " +
		"manager's username only. Enforced by the `controllers/agent` suite.\n\n")
	rulesTable(&b, agentauth.AgentRules(), nil)
	b.WriteString("\n")
	rulesTable(&b, agentauth.AgentClusterRules("<cluster>"), nil)

	b.WriteString("\n### A bootstrap token (Pull registration)\n\n")
	b.WriteString("`flotilla:agent-bootstrap`, limited further by the ValidatingAdmissionPolicy `" + agentauth.BootstrapPolicyName +
		"` (`internal/agentauth.BootstrapPolicy`); `flotilla:agent-exchange` in its Cluster's execution namespace until the agent starts.\n\n")
	rulesTable(&b, agentauth.BootstrapRules(), nil)
	b.WriteString("\n")
	rulesTable(&b, agentauth.ExchangeRules(), nil)
	b.WriteString("\n" + securityEnd)
	return b.String(), nil
}

// ReplaceSecuritySection returns doc with its generated section replaced by section.
func ReplaceSecuritySection(doc, section string) (string, error) {
	i := strings.Index(doc, securityBegin)
	j := strings.Index(doc, securityEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("%s: no generated section (%q ... %q)", SecurityDoc, securityBegin, securityEnd)
	}
	return doc[:i] + section + doc[j+len(securityEnd):], nil
}

// ReadSecurityDoc reads docs/security.md under root.
func ReadSecurityDoc(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, SecurityDoc))
	return string(b), err
}
