package interpreter

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrune(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want string
	}{
		{
			name: "host metadata, status and claim keys",
			obj: `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: ns
  uid: 1234
  resourceVersion: "9"
  generation: 3
  creationTimestamp: "2026-01-01T00:00:00Z"
  deletionTimestamp: "2026-01-02T00:00:00Z"
  deletionGracePeriodSeconds: 30
  selfLink: /apis/apps/v1/namespaces/ns/deployments/d
  finalizers: [x]
  ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: u}]
  managedFields: [{manager: kubectl}]
  labels:
    app: d
    propagationpolicy.karmada.io/permanent-id: id
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: "{}"
    deployment.kubernetes.io/revision: "2"
    propagationpolicy.karmada.io/namespace: ns
    propagationpolicy.karmada.io/name: pp
    keep: me
spec: {replicas: 1}
status: {replicas: 1}`,
			want: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns, labels: {app: d}, annotations: {keep: me}}, spec: {replicas: 1}}`,
		},
		{
			name: "claim keys of a ClusterPropagationPolicy, leaving no empty maps",
			obj: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {clusterpropagationpolicy.karmada.io/permanent-id: id},
				annotations: {clusterpropagationpolicy.karmada.io/name: cpp}}, data: {a: b}}`,
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: b}}`,
		},
		{
			name: "Service: cluster IPs and node ports",
			obj: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, clusterIP: 10.0.0.1, clusterIPs: [10.0.0.1],
				healthCheckNodePort: 31000, externalTrafficPolicy: Local, ports: [{port: 80, nodePort: 30080}, {port: 443}]}}`,
			want: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, externalTrafficPolicy: Local, ports: [{port: 80}, {port: 443}]}}`,
		},
		{
			name: "headless Service keeps None",
			obj:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: None, clusterIPs: [None], ports: [{port: 80}]}}`,
			want: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: None, clusterIPs: [None], ports: [{port: 80}]}}`,
		},
		{
			name: "Job with a generated selector",
			obj: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {selector: {matchLabels: {batch.kubernetes.io/controller-uid: u}},
				template: {metadata: {labels: {app: j, controller-uid: u, batch.kubernetes.io/controller-uid: u, job-name: j, batch.kubernetes.io/job-name: j}}}}}`,
			want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {template: {metadata: {labels: {app: j}}}}}`,
		},
		{
			name: "Job with a manual selector keeps it",
			obj: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {manualSelector: true, selector: {matchLabels: {app: j}},
				template: {metadata: {labels: {app: j, controller-uid: mine}}}}}`,
			want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {manualSelector: true, selector: {matchLabels: {app: j}},
				template: {metadata: {labels: {app: j, controller-uid: mine}}}}}`,
		},
		{
			name: "Job held by the host: managedBy goes, with a manual selector too",
			obj: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {managedBy: flotilla.io/template, manualSelector: true, selector: {matchLabels: {app: j}},
				template: {metadata: {labels: {app: j}}}}}`,
			want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {manualSelector: true, selector: {matchLabels: {app: j}},
				template: {metadata: {labels: {app: j}}}}}`,
		},
		{
			name: "Job managed by another controller keeps it",
			obj:  `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {managedBy: kueue.x-k8s.io/multikueue, template: {}}}`,
			want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {managedBy: kueue.x-k8s.io/multikueue, template: {}}}`,
		},
		{
			name: "Job with the Job controller named explicitly keeps it",
			obj:  `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {managedBy: kubernetes.io/job-controller, template: {}}}`,
			want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {managedBy: kubernetes.io/job-controller, template: {}}}`,
		},
		{
			name: "Job with an odd managedBy keeps it",
			obj:  `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {managedBy: 7, template: {}}}`,
			want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {managedBy: 7, template: {}}}`,
		},
		{
			name: "CronJob held by the host: its job template's managedBy goes",
			obj: `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {schedule: "* * * * *",
				jobTemplate: {spec: {managedBy: flotilla.io/template, template: {}}}}}`,
			want: `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {schedule: "* * * * *", jobTemplate: {spec: {template: {}}}}}`,
		},
		{
			name: "CronJob whose jobs another controller manages keeps it",
			obj:  `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {managedBy: example.com/mine}}}}`,
			want: `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c}, spec: {jobTemplate: {spec: {managedBy: example.com/mine}}}}`,
		},
		{
			name: "managedBy is not touched on other kinds",
			obj:  `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {managedBy: flotilla.io/template}}`,
			want: `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {managedBy: flotilla.io/template}}`,
		},
		{
			name: "PersistentVolumeClaim: volume and binder annotations",
			obj: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p, annotations: {pv.kubernetes.io/bind-completed: "yes",
				volume.kubernetes.io/selected-node: n1, volume.kubernetes.io/storage-provisioner: x, note: n}}, spec: {volumeName: pv-1, resources: {requests: {storage: 1Gi}}}}`,
			want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p, annotations: {note: n}}, spec: {resources: {requests: {storage: 1Gi}}}}`,
		},
		{
			name: "Pod: node name",
			obj:  `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {nodeName: n1, containers: [{name: a}]}}`,
			want: `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: a}]}}`,
		},
		{
			name: "odd types are left alone",
			obj:  `{apiVersion: v1, kind: Service, metadata: {name: s, annotations: oops}, spec: {ports: oops}}`,
			want: `{apiVersion: v1, kind: Service, metadata: {name: s, annotations: oops}, spec: {ports: oops}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fromYAML(t, tt.obj)
			pristine := obj.DeepCopy()
			got := Interpreter{}.Prune(obj)
			if diff := cmp.Diff(fromYAML(t, tt.want).Object, got.Object); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(pristine.Object, obj.Object); diff != "" {
				t.Errorf("Prune changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRetain(t *testing.T) {
	tests := []struct {
		name     string
		desired  string
		observed string
		want     string
	}{
		{
			name:     "Service keeps the member's cluster IPs and node ports",
			desired:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: NodePort, ports: [{port: 80}, {port: 53, protocol: UDP}, {port: 443, nodePort: 30443}]}}`,
			observed: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: NodePort, clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], ports: [{port: 53, protocol: UDP, nodePort: 30053}, {port: 80, protocol: TCP, nodePort: 30080}, {port: 443, nodePort: 31111}]}}`,
			want:     `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: NodePort, clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], ports: [{port: 80, nodePort: 30080}, {port: 53, protocol: UDP, nodePort: 30053}, {port: 443, nodePort: 30443}]}}`,
		},
		{
			name:     "LoadBalancer Service keeps the health check node port",
			desired:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, ports: [{port: 80}]}}`,
			observed: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, clusterIP: 10.0.0.7, healthCheckNodePort: 32000, ports: [{port: 80, nodePort: 30080}]}}`,
			want:     `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, clusterIP: 10.0.0.7, healthCheckNodePort: 32000, ports: [{port: 80, nodePort: 30080}]}}`,
		},
		{
			name:     "ClusterIP Service takes no node ports",
			desired:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {ports: [{port: 80}]}}`,
			observed: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: NodePort, clusterIP: 10.0.0.7, ports: [{port: 80, nodePort: 30080}]}}`,
			want:     `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: 10.0.0.7, ports: [{port: 80}]}}`,
		},
		{
			name:     "desired cluster IP wins",
			desired:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: None}}`,
			observed: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: 10.0.0.7}}`,
			want:     `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: None}}`,
		},
		{
			name:     "ExternalName Service takes no cluster IP",
			desired:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: ExternalName, externalName: example.com}}`,
			observed: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: ClusterIP, clusterIP: 10.0.0.7}}`,
			want:     `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: ExternalName, externalName: example.com}}`,
		},
		{
			name:     "PersistentVolumeClaim keeps its volume",
			desired:  `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, spec: {}}`,
			observed: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, spec: {volumeName: pv-9}}`,
			want:     `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: p}, spec: {volumeName: pv-9}}`,
		},
		{
			name:     "retain-replicas keeps the member's replicas",
			desired:  `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, labels: {resourcetemplate.karmada.io/retain-replicas: "true"}}, spec: {replicas: 2}}`,
			observed: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 7}}`,
			want:     `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, labels: {resourcetemplate.karmada.io/retain-replicas: "true"}}, spec: {replicas: 7}}`,
		},
		{
			name:     "retain-replicas on a custom resource",
			desired:  `{apiVersion: example.com/v1, kind: App, metadata: {name: a, labels: {resourcetemplate.karmada.io/retain-replicas: "true"}}, spec: {replicas: 2}}`,
			observed: `{apiVersion: example.com/v1, kind: App, metadata: {name: a}, spec: {replicas: 4}}`,
			want:     `{apiVersion: example.com/v1, kind: App, metadata: {name: a, labels: {resourcetemplate.karmada.io/retain-replicas: "true"}}, spec: {replicas: 4}}`,
		},
		{
			name:     "without the label the scheduler's replicas stand",
			desired:  `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 2}}`,
			observed: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 7}}`,
			want:     `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 2}}`,
		},
		{
			name:     "retain-replicas on a kind without replicas does nothing",
			desired:  `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, labels: {resourcetemplate.karmada.io/retain-replicas: "true"}}, spec: {}}`,
			observed: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d}, spec: {replicas: 7}}`,
			want:     `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, labels: {resourcetemplate.karmada.io/retain-replicas: "true"}}, spec: {}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired, observed := fromYAML(t, tt.desired), fromYAML(t, tt.observed)
			pristine := desired.DeepCopy()
			got, err := Interpreter{}.Retain(desired, observed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromYAML(t, tt.want).Object, got.Object); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(pristine.Object, desired.Object); diff != "" {
				t.Errorf("Retain changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRetainNilObserved(t *testing.T) {
	desired := fromYAML(t, `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {}}`)
	got, err := Interpreter{}.Retain(desired, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(desired.Object, got.Object); diff != "" || got == desired {
		t.Errorf("Retain(desired, nil) should be an equal copy (-want +got):\n%s", diff)
	}
}

func TestRetainErrors(t *testing.T) {
	for _, tt := range []struct{ desired, observed, want string }{
		{`{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: 1}}`, `{apiVersion: v1, kind: Service, metadata: {name: s}}`, "spec.type: want a string"},
		{`{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: NodePort, ports: [1]}}`, `{apiVersion: v1, kind: Service, metadata: {name: s}}`, "spec.ports[0]: want an object"},
		{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, labels: {resourcetemplate.karmada.io/retain-replicas: "true"}}}`, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: x}}`, "spec.replicas: want an integer"},
	} {
		got, err := Interpreter{}.Retain(fromYAML(t, tt.desired), fromYAML(t, tt.observed))
		if err == nil || !strings.Contains(err.Error(), tt.want) || got != nil {
			t.Errorf("Retain(%s) = %v, %v; want nil and an error containing %q", tt.desired, got, err, tt.want)
		}
	}
}
