package main

import (
	"strings"
	"testing"
)

const schedulePolicy = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
`

const scheduleTemplate = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: "6"}}
`

// Three clusters: edge has 20 free CPUs on 1-CPU nodes, big two 16-CPU nodes, gpu two 8-CPU
// nodes; none serves a Deployment's API but edge, big and gpu.
const scheduleClustersFile = `apiVersion: v1
kind: List
items:
- apiVersion: cluster.karmada.io/v1alpha1
  kind: Cluster
  metadata: {name: edge}
  spec: {syncMode: Push, apiEndpoint: "https://127.0.0.1:1"}
  status:
    apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
    resourceSummary:
      allocatable: {cpu: "20", pods: "2200"}
      nodeGroups: [{count: 20, free: {cpu: "1", pods: "110"}}]
- apiVersion: cluster.karmada.io/v1alpha1
  kind: Cluster
  metadata: {name: big}
  spec: {syncMode: Push, apiEndpoint: "https://127.0.0.1:1"}
  status:
    apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
    resourceSummary:
      allocatable: {cpu: "32", pods: "220"}
      nodeGroups: [{count: 2, free: {cpu: "16", pods: "110"}}]
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: gpu}
spec: {syncMode: Push, apiEndpoint: "https://127.0.0.1:1"}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary:
    allocatable: {cpu: "16", pods: "220", nvidia.com/gpu: "4"}
    nodeGroups: [{count: 2, free: {cpu: "8", pods: "110", nvidia.com/gpu: "2"}}]
`

func TestScheduleDryRun(t *testing.T) {
	f := files(t, "policy.yaml", schedulePolicy, "web.yaml", scheduleTemplate, "clusters.yaml", scheduleClustersFile,
		"both.yaml", schedulePolicy+"---\n"+scheduleTemplate)
	out, err := run(t, "schedule", "--dry-run", "-f", f["policy.yaml"], "-f", f["web.yaml"], "--clusters-file", f["clusters.yaml"])
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"Deployment default/web (5 replicas)",
		"CLUSTER  FILTERS",
		"edge     ReplicaCapacity: had no room for one replica on its nodes  0",
		"big      fits",
		"Result: big: 3, gpu: 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, err = run(t, "schedule", "--dry-run", "-v", "-f", f["both.yaml"], "--clusters-file", f["clusters.yaml"], "--scheduler-plugins", "*,-ReplicaCapacity")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"  filter APIEnablement            pass", "edge     fits", "Result: big: 3, gpu: 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("-v without ReplicaCapacity: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ReplicaCapacity") {
		t.Errorf("a disabled plugin is shown:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "-f", f["both.yaml"]}, "only --dry-run is supported"},
		{[]string{"schedule", "--dry-run"}, "give the policy and the template with -f"},
		{[]string{"schedule", "--dry-run", "-f", f["web.yaml"], "--clusters-file", f["clusters.yaml"]}, "no PropagationPolicy or ClusterPropagationPolicy given"},
		{[]string{"schedule", "--dry-run", "-f", f["policy.yaml"], "--clusters-file", f["clusters.yaml"]}, "no template given"},
		{[]string{"schedule", "--dry-run", "-f", f["both.yaml"], "--clusters-file", f["web.yaml"]}, "Deployment web is not a Cluster"},
		{[]string{"schedule", "--dry-run", "-f", f["both.yaml"], "--clusters-file", f["clusters.yaml"], "--scheduler-plugins", "*,-Typo"}, `no plugin is named "Typo"`},
	} {
		_, err := run(t, tc.args...)
		wantError(t, err, tc.want)
	}
}
