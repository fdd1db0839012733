package interpreter

import (
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestHealth(t *testing.T) {
	const (
		healthy   = workv1alpha1.ResourceHealthy
		unhealthy = workv1alpha1.ResourceUnhealthy
		unknown   = workv1alpha1.ResourceUnknownHealth
	)
	tests := []struct {
		name string
		obj  string
		want workv1alpha1.ResourceHealth
	}{
		{"Deployment rolled out", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}}`, healthy},
		{"Deployment default replicas", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}, spec: {}, status: {observedGeneration: 1, updatedReplicas: 1, availableReplicas: 1}}`, healthy},
		{"Deployment scaled to zero", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}, spec: {replicas: 0}, status: {observedGeneration: 1}}`, healthy},
		{"Deployment not observed", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 3}, spec: {replicas: 2}, status: {observedGeneration: 2, updatedReplicas: 2, availableReplicas: 2}}`, unhealthy},
		{"Deployment rolling", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, updatedReplicas: 1, availableReplicas: 2}}`, unhealthy},
		{"Deployment unavailable", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, updatedReplicas: 2, availableReplicas: 1}}`, unhealthy},
		{"Deployment without status", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}, spec: {replicas: 1}}`, unhealthy},
		{"Deployment with string replicas", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: "2"}, status: {}}`, unknown},
		{"Deployment with odd status", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 1}, status: {availableReplicas: x}}`, unknown},

		{"StatefulSet ready", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 2}, status: {observedGeneration: 1, availableReplicas: 2, updatedReplicas: 2}}`, healthy},
		{"StatefulSet not updated", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 2}, status: {observedGeneration: 1, availableReplicas: 2, updatedReplicas: 1}}`, unhealthy},
		{"StatefulSet partitioned rollout", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 2, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}}, status: {observedGeneration: 1, availableReplicas: 2, updatedReplicas: 1}}`, healthy},
		{"StatefulSet OnDelete", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 2, updateStrategy: {type: OnDelete}}, status: {observedGeneration: 1, availableReplicas: 2}}`, healthy},
		{"StatefulSet of an old member without availableReplicas", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 1}, status: {observedGeneration: 1, readyReplicas: 1, updatedReplicas: 1}}`, healthy},
		{"StatefulSet not ready", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 2}, status: {observedGeneration: 1, availableReplicas: 1, updatedReplicas: 2}}`, unhealthy},

		{"ReplicaSet available", `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: r, generation: 1}, spec: {replicas: 2}, status: {observedGeneration: 1, availableReplicas: 2}}`, healthy},
		{"ReplicaSet short", `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: r, generation: 1}, spec: {replicas: 2}, status: {observedGeneration: 1, availableReplicas: 1}}`, unhealthy},

		{"DaemonSet rolled out", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}}`, healthy},
		{"DaemonSet on no nodes", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 0}}`, healthy},
		{"DaemonSet unavailable", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2}}`, unhealthy},
		{"DaemonSet not observed", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: 2}, status: {observedGeneration: 1, desiredNumberScheduled: 0}}`, unhealthy},

		{"Job running", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {active: 1}}`, healthy},
		{"Job complete", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Complete, status: "True"}]}}`, healthy},
		{"Job failed", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Failed, status: "True"}]}}`, unhealthy},
		{"CronJob", `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}}`, healthy},

		{"Pod running", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running}}`, healthy},
		{"Pod succeeded", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Succeeded}}`, healthy},
		{"Pod pending", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Pending}}`, unhealthy},
		{"Pod failed", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Failed}}`, unhealthy},
		{"Pod with odd phase", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: 1}}`, unknown},

		{"PVC bound", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, status: {phase: Bound}}`, healthy},
		{"PVC pending", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, status: {phase: Pending}}`, unhealthy},

		{"ClusterIP Service", `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {}}`, healthy},
		{"LoadBalancer with ingress", `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer}, status: {loadBalancer: {ingress: [{ip: 1.2.3.4}]}}}`, healthy},
		{"LoadBalancer waiting", `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer}, status: {loadBalancer: {}}}`, unhealthy},
		{"Ingress with ingress", `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i}, status: {loadBalancer: {ingress: [{hostname: a}]}}}`, healthy},
		{"Ingress waiting", `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i}}`, unhealthy},

		{"ConfigMap", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`, healthy},
		{"Secret", `{apiVersion: v1, kind: Secret, metadata: {name: s}}`, healthy},

		{"PDB healthy", `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, generation: 1}, status: {observedGeneration: 1, currentHealthy: 2, desiredHealthy: 2}}`, healthy},
		{"PDB short", `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p, generation: 1}, status: {observedGeneration: 1, currentHealthy: 1, desiredHealthy: 2}}`, unhealthy},

		{"custom without status", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}}`, healthy},
		{"custom Ready", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {conditions: [{type: Ready, status: "True"}]}}`, healthy},
		{"custom not Ready", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {conditions: [{type: Ready, status: "False"}]}}`, unhealthy},
		{"custom Ready Unknown", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {conditions: [{type: Ready, status: Unknown}]}}`, unknown},
		{"custom Available", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {conditions: [{type: Available, status: "False"}]}}`, unhealthy},
		{"custom Stalled beats Ready", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {conditions: [{type: Ready, status: "True"}, {type: Stalled, status: "True"}]}}`, unhealthy},
		{"custom other conditions", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {conditions: [{type: Synced, status: "False"}]}}`, healthy},
		{"custom stale status", `{apiVersion: example.com/v1, kind: App, metadata: {name: a, generation: 3}, status: {observedGeneration: 2, conditions: [{type: Ready, status: "True"}]}}`, unknown},
		{"custom odd conditions", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {conditions: {Ready: true}}}`, unknown},
		{"custom phase Running", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {phase: Running}}`, healthy},
		{"custom phase ready, any case", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {phase: READY}}`, healthy},
		{"custom phase Failed", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {phase: Failed}}`, unhealthy},
		{"custom phase Provisioning", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {phase: Provisioning}}`, unknown},
		{"custom Ready condition beats phase", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {phase: Failed, conditions: [{type: Ready, status: "True"}]}}`, healthy},
		{"custom odd phase", `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, status: {phase: 3}}`, unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Interpreter{}).Health(fromYAML(t, tt.obj)); got != tt.want {
				t.Errorf("Health() = %s, want %s", got, tt.want)
			}
		})
	}
}
