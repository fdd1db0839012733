package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const clusterPolicyYAML = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team-label
  generation: 2
  creationTimestamp: "2026-03-09T08:00:00Z"
spec:
  validationFailureAction: Enforce
  background: true
  rules:
  - name: check-team
    match:
      any:
      - resources: {kinds: [Deployment, StatefulSet]}
    context:
    - name: teams
      configMap: {name: allowed-teams, namespace: kyverno}
    - name: perNamespace
      configMap: {name: "{{request.namespace}}-settings", namespace: "{{request.namespace}}"}
    validate:
      message: "label team must be one of the allowed teams"
      deny:
        conditions:
          any:
          - key: "{{request.object.metadata.labels.team || ''}}"
            operator: AnyNotIn
            value: "{{teams.data.list}}"
status:
  ready: true
  rulecount: {validate: 1, generate: 0, mutate: 0, verifyimages: 0}
  conditions:
  - {type: Ready, status: "True", reason: Succeeded, message: "Ready", lastTransitionTime: "2026-03-09T08:00:05Z"}
`

func TestBuiltinKyvernoPolicies(t *testing.T) {
	cp := object(t, clusterPolicyYAML)
	c := builtinFor(t, cp)
	ops(t, c, opReflect, opAgg, opHealth, opDeps)
	checkHealth(t, c, cp, []healthCase{
		{"ready", nil, true},
		{"not ready", func(u *unstructured.Unstructured) {
			condition(u.Object["status"].(map[string]any), "Ready")["status"] = "False"
		}, false},
		{"older Kyverno: ready", func(u *unstructured.Unstructured) { set(u, "status.conditions", nil) }, true},
		{"older Kyverno: not ready", func(u *unstructured.Unstructured) {
			set(u, "status.conditions", nil)
			set(u, "status.ready", false)
		}, false},
		{"no status", func(u *unstructured.Unstructured) { set(u, "status", nil) }, false},
	})
	status, err := c.AggregateStatus(cp, items(t, c, members{"eu": cp, "us": cp}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"ready": true, "rulecount": map[string]any{"validate": int64(1), "generate": int64(0), "mutate": int64(0), "verifyimages": int64(0)},
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReadyInAllClusters", "message": "ready in all 2 clusters", "lastTransitionTime": "2026-03-09T08:00:05Z"}}}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("AggregateStatus (-want +got):\n%s", diff)
	}
	status, _ = c.AggregateStatus(cp, items(t, c, members{"eu": cp, "us": nil}))
	if status["ready"] != false || condition(status, "Ready")["status"] != "Unknown" || condition(status, "Ready")["message"] != "1 of 2 clusters ready; waiting for us" {
		t.Errorf("AggregateStatus, one not reporting = %v", status)
	}
	// The ConfigMap named with variables is resolved per request: not a dependency.
	got, _ := c.GetDependencies(cp)
	if diff := cmp.Diff(deps("v1 ConfigMap kyverno allowed-teams"), got); diff != "" {
		t.Errorf("GetDependencies (-want +got):\n%s", diff)
	}

	p := object(t, `
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: add-defaults, namespace: shop, generation: 1}
spec:
  rules:
  - name: defaults
    match: {any: [{resources: {kinds: [Pod]}}]}
    context:
    - name: defaults
      configMap: {name: pod-defaults}
    mutate:
      patchStrategicMerge:
        metadata:
          labels: {tier: "{{defaults.data.tier}}"}
status:
  conditions:
  - {type: Ready, status: "True", reason: Succeeded, message: Ready, lastTransitionTime: "2026-03-09T09:00:00Z"}
`)
	pc := builtinFor(t, p)
	ops(t, pc, opReflect, opAgg, opHealth, opDeps)
	if h, err := pc.InterpretHealth(p); err != nil || !h {
		t.Errorf("Policy InterpretHealth = %v, %v", h, err)
	}
	if got, err := pc.GetDependencies(p); err != nil || !cmp.Equal(got, deps("v1 ConfigMap shop pod-defaults")) {
		t.Errorf("Policy GetDependencies = %v, %v", got, err)
	}
}
